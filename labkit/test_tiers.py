"""The test tiers `./lab test` runs, as pytest marker expressions over the markers pyproject.toml declares.

    unit    ./lab test --fast     no API test server, no root, no VMs, no image builds
    api     ./lab test --api      the scheduler and the placement runner over HTTP against the API test server
    faults  ./lab test --faults   the scheduler under injected faults, through a TCP proxy in front of that server
    browser ./lab test --browser  the placement page (./lab ui) in a real headless Chromium, against that server
    (none)  ./lab test            every tier, the system and image suites (root, VMs, image builds) included

A test joins the api tier by its `api` marker; tests/conftest.py adds it to any test that uses the API test
server's fixture, so a new test cannot slip into the unit tier by forgetting it.
"""

from __future__ import annotations

from collections.abc import Sequence

TIERS = {
    "unit": "not api and not faults and not system and not image and not browser",
    # the fault and browser tiers run against the API test server too
    "api": "api and not faults and not browser",
    "faults": "faults",
    "browser": "browser",
}


def pytest_args(tiers: Sequence[str], keyword: str | None = None) -> list[str]:
    """pytest's arguments for these tiers (all of them, system and image included, when none is named)."""
    unknown = [tier for tier in tiers if tier not in TIERS]
    if unknown:
        raise ValueError(f"unknown test tier {unknown[0]!r} (tiers: {', '.join(TIERS)})")
    args = ["-m", " or ".join(f"({TIERS[tier]})" for tier in tiers)] if tiers else []
    return [*args, "-k", keyword] if keyword else args
