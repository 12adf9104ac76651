"""Suite-wide rules. A test that uses the API test server's fixture belongs to the api tier (labkit/test_tiers.py):
it gets the `api` marker here even when its module forgot it, so `./lab test --fast` (the unit tier) never starts
the server. Tests that start the server or a scheduler process some other way carry the marker themselves."""

import pytest

API_SERVER_FIXTURE = "kube_api"  # every fixture that serves the API test server depends on this one


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if API_SERVER_FIXTURE in getattr(item, "fixturenames", ()) and item.get_closest_marker("api") is None:
            item.add_marker(pytest.mark.api)
