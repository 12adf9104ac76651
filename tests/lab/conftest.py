"""The lab suite's API tests use the Kubernetes API test server's fixtures; `verb_run` runs a verb in-process."""

from dataclasses import dataclass

import pytest

from kubeapi_testserver.fixtures import kube_api, kube_api_kubeconfig  # noqa: F401
from labkit.paths import PROJECT_ROOT
from labkit.program import LabProgram


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str  # whitespace collapsed: the console wraps long messages at the terminal's width


@pytest.fixture
def verb_run(monkeypatch, capsys):
    """`./lab VERB ...` in this process, through the program ./lab starts (labkit.program: invoke's task runner
    over tasks.py), with the environment variables and PATH each call gives; verbs that exec another program
    (ssh, kubectl) need a real process instead."""
    monkeypatch.chdir(PROJECT_ROOT)

    def run(*args: str, env: dict[str, str] | None = None, path: str | None = None) -> Ran:
        for name, value in {**(env or {}), **({"PATH": path} if path is not None else {})}.items():
            monkeypatch.setenv(name, value)
        try:
            LabProgram().run(["lab", *args])
            code = 0
        except SystemExit as exit_:
            code = exit_.code or 0
        out = capsys.readouterr()
        return Ran(code, out.out, " ".join(out.err.split()))

    return run
