"""`./lab`'s help: the front screen (verbs, common flags, examples), every verb's help, tab completion.

Most checks run labkit.program in-process (a subprocess per verb cost ~90 s); one runs `./lab --help` itself and
one drives the bash completion through it, from a copy of the project whose virtualenv `python` is this one.
"""

import hashlib
import shlex
import shutil
import subprocess
import sys

import pytest

from labkit.paths import PROJECT_ROOT
from labkit.program import EXAMPLES, VERB_GROUPS, LabProgram

WIDTH = 80


@pytest.fixture
def lab(monkeypatch, capsys):
    """Run `./lab WORDS...` in-process (invoke finds tasks.py in the current folder); return its stdout."""
    monkeypatch.chdir(PROJECT_ROOT)

    def run(*words: str) -> str:
        LabProgram().run(["lab", *words], exit=False)
        return capsys.readouterr().out

    return run


def verbs_and_lines() -> dict[str, str]:
    program = LabProgram()
    program.run(["lab", "--list", "--list-format", "json"], exit=False)  # loads tasks.py, prints nothing here
    return {name: task.__doc__.strip().splitlines()[0] for name, task in program.collection.tasks.items()}


@pytest.fixture
def verbs(monkeypatch, capsys) -> dict[str, str]:
    monkeypatch.chdir(PROJECT_ROOT)
    found = verbs_and_lines()
    capsys.readouterr()
    return found


def test_front_screen_lists_every_verb_on_one_line_with_flags_and_examples(lab, verbs):
    assert {"up", "deploy-scheduler", "test-placement", "explain", "ssh", "kubectl", "test"} <= set(verbs)
    for words in ((), ("--help",), ("-h",)):
        out = lab(*words)
        assert "Core options" not in out and "--write-pyc" not in out, out  # invoke's are behind --invoke-help
        lines = out.splitlines()
        for verb, line in verbs.items():
            assert f"  {verb:<20}{line}" in lines, f"{verb}: {line!r} not on one line of:\n{out}"
        assert all(len(line) <= WIDTH for line in lines), [line for line in lines if len(line) > WIDTH]
        for flag in ("--lab FILE", "-h, --help", "--list", "--version", "--print-completion-script bash"):
            assert f"\n  {flag}" in out, flag
        examples = out.split("\nExamples:\n")[1].split("\n\n")[0]
        assert examples.count("  ./lab ") == 2, examples
        assert "source <(./lab --print-completion-script bash)" in out


def test_every_verb_has_its_place_on_the_front_screen(verbs):
    grouped = [name for names in VERB_GROUPS.values() for name in names]
    assert sorted(grouped) == sorted(verbs)  # none falls to "Other verbs", none listed that does not exist


def test_front_screen_examples_parse_as_real_verbs_and_options(monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    program = LabProgram()
    program.run(["lab", "--list", "--list-format", "json"], exit=False)
    parser = program._make_parser()
    for command, _ in EXAMPLES:
        for part in command.split("&&"):
            words = shlex.split(part)
            assert words[0] == "./lab"
            parsed = parser.parse_argv(words[1:])  # raises ParseError on an unknown verb or option
            assert [context.name for context in parsed[1:]] == [words[1]]


def test_every_verbs_help_has_its_options_and_an_example(lab, verbs):
    for verb in verbs:
        out = lab("--help", verb)
        assert out.startswith(f"Usage: ./lab [--core-opts] {verb} "), out
        assert "Example: ./lab " in out, f"./lab {verb} --help has no example:\n{out}"
    up = lab("--help", "up")
    assert "--package-source" in up and "air-gapped" in up
    assert "--inventory" in up and "inventory/ssh-example.py" in up


def test_list_and_invoke_help_still_work(lab, verbs):
    listed = lab("--list")
    for verb, line in verbs.items():
        assert f"  {verb} " in listed and line in listed, verb
    assert "--write-pyc" in lab("--invoke-help")


def test_completion_script_for_another_shell_is_refused_naming_bash(monkeypatch, capsys):
    monkeypatch.chdir(PROJECT_ROOT)
    LabProgram().run(["lab", "--print-completion-script", "fish"], exit=False)
    assert "completes in bash only" in capsys.readouterr().err


@pytest.fixture
def project(tmp_path):
    """A copy of the project's `lab` beside tasks.py, set up: its .venv's python is the one running the tests."""
    project = tmp_path / "kubelab"
    bin_dir = project / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    shutil.copy2(PROJECT_ROOT / "lab", project / "lab")
    shutil.copy2(PROJECT_ROOT / "pyproject.toml", project / "pyproject.toml")
    (project / "tasks.py").symlink_to(PROJECT_ROOT / "tasks.py")
    (bin_dir / "python").write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} \"$@\"\n")
    (bin_dir / "python").chmod(0o755)
    (bin_dir / "invoke").symlink_to(bin_dir / "python")  # present: set up
    digest = hashlib.sha256((project / "pyproject.toml").read_bytes()).hexdigest()
    (project / ".venv" / ".installed-from").write_text(digest + "\n")
    return project


def test_lab_help_itself(project, verbs):
    proc = subprocess.run([str(project / "lab"), "--help"], check=False, capture_output=True, text=True,
                          timeout=120, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("kubelab: ")
    assert all(f"  {verb} " in proc.stdout for verb in verbs)
    assert "setting up" not in proc.stderr


@pytest.mark.parametrize("verb", ["test-placement", "ui", "explain"])
def test_verb_dash_h_is_its_help(project, verb):
    """`./lab VERB -h` as `./lab VERB --help`, even where an option's short flag is -h (test-placement's --html)
    or a positional argument comes first (explain's POD)."""
    proc = subprocess.run([str(project / "lab"), verb, "-h"], check=False, capture_output=True, text=True,
                          timeout=120, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"Usage: ./lab [--core-opts] {verb} "), proc.stdout


def test_a_reader_that_leaves_early_gets_no_traceback():
    """`./lab --list | head -1`: the pipe closes while the program still writes (here: before it starts)."""
    proc = subprocess.Popen([sys.executable, "-m", "labkit.program", "--list"], cwd=PROJECT_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert "Traceback" not in err and proc.returncode == 1, err


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completion_through_lab(project):
    """The enable line from the help screen, then what bash's completion calls for `./lab up --l<TAB>` typed
    from another folder (verb names come from the same --complete: the in-process tests cover the verbs)."""
    script = f"""
        set -e
        cd {shlex.quote(str(project))}
        source <(./lab --print-completion-script bash)
        cd /
        complete -p lab
        COMP_WORDS=({shlex.quote(str(project / 'lab'))} up --l); COMP_CWORD=2; _kubelab_complete
        echo "up: ${{COMPREPLY[*]}}"
    """
    proc = subprocess.run(["bash", "-c", script], check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == "complete -o default -F _kubelab_complete lab"
    assert out[1:] == ["up: --lab"]
