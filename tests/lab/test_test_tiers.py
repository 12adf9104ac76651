"""`./lab test`'s tiers: --fast is the unit tier (no API test server), --api and --faults their own tiers, no
switch every tier with the system suites' packages installed first (as CI runs it); and the api marker follows
the API test server's fixture (tests/conftest.py)."""

import importlib.util
import subprocess
import sys
import textwrap

import pytest
from invoke import MockContext, Result

from labkit.paths import PROJECT_ROOT
from labkit.test_tiers import TIERS, pytest_args

PYTEST = [sys.executable, "-m", "pytest"]
UNIT = "not api and not faults and not system and not image and not browser"


@pytest.fixture(scope="module")
def tasks():
    spec = importlib.util.spec_from_file_location("lab_tasks", PROJECT_ROOT / "tasks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def commands(tasks, monkeypatch, uid=1000, **switches) -> list[str]:
    monkeypatch.setattr("os.geteuid", lambda: uid)
    c = MockContext(run=Result())
    tasks.test(c, **switches)
    return [call.args[0] for call in c.run.call_args_list]


@pytest.mark.parametrize(("switches", "marker"), [
    ({"fast": True}, f"({UNIT})"),
    ({"api": True}, "(api and not faults and not browser)"),
    ({"faults": True}, "(faults)"),
    ({"browser": True}, "(browser)"),
    ({"fast": True, "api": True}, f"({UNIT}) or (api and not faults and not browser)"),
])
def test_switches_pick_tiers(tasks, monkeypatch, switches, marker):
    (command,) = commands(tasks, monkeypatch, uid=0, **switches)  # no test dependencies installed for a tier
    assert command.startswith(f"{sys.executable} -m pytest -m '{marker}'"), command


def test_no_switch_runs_every_tier_after_the_test_dependencies_when_root(tasks, monkeypatch):
    install, run = commands(tasks, monkeypatch, uid=0)
    assert install.endswith("scripts/install-test-deps.sh")
    assert run == f"{sys.executable} -m pytest"  # no -m: system, image, api, faults and unit alike
    assert commands(tasks, monkeypatch, uid=1000, k="kubeconfig") == [f"{sys.executable} -m pytest -k kubeconfig"]


def test_every_marker_a_tier_names_is_declared():
    declared = {line.split(":")[0].strip(' "') for line in
                (PROJECT_ROOT / "pyproject.toml").read_text().split("markers = [")[1].split("]")[0].splitlines()
                if ":" in line}
    assert {"api", "faults", "system", "image", "browser"} <= declared
    with pytest.raises(ValueError, match="unknown test tier 'slow'"):
        pytest_args(["slow"])
    assert set(TIERS) == {"unit", "api", "faults", "browser"}


def test_a_test_using_the_api_server_fixture_is_in_the_api_tier(tmp_path):
    """With the suite's own hook, a test that asks for the server's fixture without the marker is deselected
    from the unit tier and selected by --api; one that does not ask stays in the unit tier."""
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""
        import pytest
        from tests.conftest import pytest_collection_modifyitems  # noqa: F401  the hook under test

        @pytest.fixture
        def kube_api():
            yield "STAND-IN: the fixture's name is all the hook reads"
    """))
    (tmp_path / "test_sample.py").write_text("def test_served(kube_api):\n    pass\n\ndef test_plain():\n    pass\n")

    def selected(tier: str) -> list[str]:
        proc = subprocess.run([*PYTEST, "--collect-only", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                               *pytest_args([tier]), str(tmp_path)], check=False, capture_output=True, text=True,
                              cwd=tmp_path, timeout=120, env={"PYTHONPATH": str(PROJECT_ROOT), "PATH": ""})
        return [line.split("::")[1] for line in proc.stdout.splitlines() if "::" in line]

    assert selected("unit") == ["test_plain"]
    assert selected("api") == ["test_served"]
