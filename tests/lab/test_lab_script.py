"""`./lab` on Linux and on macOS (no sha256sum there; `shasum -a 256` instead).

The script runs from a copy of the project's `lab` and pyproject.toml with an already set up .venv whose
`python` is a stand-in that prints its arguments (./lab hands every verb to `python -m labkit.program`, invoke's
task runner), and a PATH holding only the tools the script needs, so whether sha256sum exists is the test's
choice. STAND-IN `shasum`: answers `shasum -a 256 FILE` with the file's real SHA-256 in shasum's output format
("HEX  FILE"), computed by Python; nothing else.
"""

import hashlib
import shutil
import subprocess
import sys

import pytest

from labkit.paths import PROJECT_ROOT

SHASUM = """#!/bin/sh
# STAND-IN for macOS's shasum: `shasum -a 256 FILE` only (see tests/lab/test_lab_script.py).
[ "$1 $2" = "-a 256" ] && [ $# -eq 3 ] || { echo "stand-in shasum: not modelled: $*" >&2; exit 64; }
exec python3 -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest() + "  " + sys.argv[1])' "$3"
"""
PYTHON = """#!/bin/sh
# STAND-IN for the virtualenv's python: prints what ./lab handed it.
echo "python $*"
"""
# The virtualenv's invoke is never run: the script takes its presence as "set up".
INVOKE = "#!/bin/sh\nexit 99\n"


def project_copy(tmp_path):
    project = tmp_path / "project"
    (project / ".venv" / "bin").mkdir(parents=True)
    shutil.copy2(PROJECT_ROOT / "lab", project / "lab")
    shutil.copy2(PROJECT_ROOT / "pyproject.toml", project / "pyproject.toml")
    for name, script in (("python", PYTHON), ("invoke", INVOKE)):
        program = project / ".venv" / "bin" / name
        program.write_text(script)
        program.chmod(0o755)
    # Set up already: the stamp holds the hash of these pins, so a correct hash means no reinstall.
    digest = hashlib.sha256((project / "pyproject.toml").read_bytes()).hexdigest()
    (project / ".venv" / ".installed-from").write_text(digest + "\n")
    return project


def tools_path(tmp_path, host: str) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "cut", "cat"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    (bin_dir / "python3").symlink_to(sys.executable)
    if host == "linux":
        (bin_dir / "sha256sum").symlink_to(shutil.which("sha256sum"))
    else:
        (bin_dir / "shasum").write_text(SHASUM)
        (bin_dir / "shasum").chmod(0o755)
    return str(bin_dir)


@pytest.mark.parametrize("host", ["linux", "macos"])
def test_lab_script_finds_its_setup_and_runs_the_verb(tmp_path, host):
    project = project_copy(tmp_path)
    env = {"PATH": tools_path(tmp_path, host), "HOME": str(tmp_path)}
    proc = subprocess.run([str(project / "lab"), "--list"], check=False, capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "python -m labkit.program --list\n"
    assert "setting up" not in proc.stderr  # the pins' hash matched the stamp: nothing reinstalled


def test_version_goes_to_the_projects_own_report(tmp_path):
    """`./lab --version` runs labkit.version (invoke's own would name invoke); the rest still goes to invoke."""
    project = project_copy(tmp_path)
    env = {"PATH": tools_path(tmp_path, "linux"), "HOME": str(tmp_path)}
    proc = subprocess.run([str(project / "lab"), "--version", "--lab", "x.yaml"], check=False, capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "python -m labkit.version --lab x.yaml\n"


def test_verb_then_help_is_the_verbs_help_even_with_a_positional_argument(tmp_path):
    """`./lab explain --help` (explain takes the pod name as a positional argument, which invoke would fill
    with "--help") reaches invoke as `--help explain`; other arguments pass through unchanged."""
    project = project_copy(tmp_path)
    env = {"PATH": tools_path(tmp_path, "linux"), "HOME": str(tmp_path)}

    def lab(*args: str) -> str:
        proc = subprocess.run([str(project / "lab"), *args], check=True, capture_output=True, text=True, env=env,
                              timeout=60)
        return proc.stdout

    assert lab("explain", "--help") == "python -m labkit.program --help explain\n"
    assert lab("explain", "web-1", "--help") == "python -m labkit.program explain web-1 --help\n"
    assert lab("--help", "up") == "python -m labkit.program --help up\n"


def args_reaching_invoke(tmp_path, *args: str) -> list[str]:
    """What ./lab hands invoke (python -m labkit.program) for these words, one argument per line so that quoting
    shows."""
    project = project_copy(tmp_path)
    python = project / ".venv" / "bin" / "python"
    python.write_text("#!/bin/sh\n# STAND-IN for the virtualenv's python: prints its arguments, one per line.\n"
                      'printf "%s\\n" "$@"\n')
    env = {"PATH": tools_path(tmp_path, "linux"), "HOME": str(tmp_path)}
    proc = subprocess.run([str(project / "lab"), *args], check=True, capture_output=True, text=True, env=env,
                          timeout=60)
    words = proc.stdout.splitlines()
    assert words[:2] == ["-m", "labkit.program"], words
    return words[2:]


@pytest.mark.parametrize(("words", "handed"), [
    (["ssh", "k8s-worker-01"], ["ssh", "--node", "k8s-worker-01"]),
    (["ssh", "k8s-worker-01", "--", "sudo", "crictl", "images"],
     ["ssh", "--node", "k8s-worker-01", "--", "sudo", "crictl", "images"]),
    (["ssh", "--lab", "my lab.yaml", "--inventory=inv.py", "k8s-worker-01", "--", "hostname"],
     ["ssh", "--lab", "my lab.yaml", "--inventory=inv.py", "--node", "k8s-worker-01", "--", "hostname"]),
    (["ssh", "-l", "x.yaml", "k8s-worker-01"], ["ssh", "-l", "x.yaml", "--node", "k8s-worker-01"]),
    # the old forms, unchanged
    (["ssh"], ["ssh"]),
    (["ssh", "--node", "k8s-worker-01", "--", "hostname"], ["ssh", "--node", "k8s-worker-01", "--", "hostname"]),
    (["ssh", "--", "hostname"], ["ssh", "--", "hostname"]),
    (["ssh", "--help"], ["--help", "ssh"]),
    (["ssh", "--node"], ["ssh", "--node"]),
])
def test_ssh_takes_the_node_as_its_first_word(tmp_path, words, handed):
    assert args_reaching_invoke(tmp_path, *words) == handed


@pytest.mark.parametrize(("words", "handed"), [
    (["kubectl", "get", "pods", "-A"], ["kubectl", "--", "get", "pods", "-A"]),
    # kubectl's own flags and their own `--` are kubectl's, even first
    (["kubectl", "-n", "kube-system", "exec", "pod-1", "--", "ls", "/"],
     ["kubectl", "--", "-n", "kube-system", "exec", "pod-1", "--", "ls", "/"]),
    (["kubectl", "get", "pods", "-l", "app in (a, b)"], ["kubectl", "--", "get", "pods", "-l", "app in (a, b)"]),
    (["kubectl", "get", "--help"], ["kubectl", "--", "get", "--help"]),
    # --lab first is ours
    (["kubectl", "--lab", "my lab.yaml", "get", "nodes"], ["kubectl", "--lab", "my lab.yaml", "--", "get", "nodes"]),
    (["kubectl", "--lab=x.yaml", "version"], ["kubectl", "--lab=x.yaml", "--", "version"]),
    (["kubectl", "-l", "app=web", "get", "pods"], ["kubectl", "--", "-l", "app=web", "get", "pods"]),
    # the old form and our own help, unchanged
    (["kubectl", "--", "get", "pods"], ["kubectl", "--", "get", "pods"]),
    (["kubectl", "--lab", "x.yaml", "--", "get", "pods"], ["kubectl", "--lab", "x.yaml", "--", "get", "pods"]),
    (["kubectl", "--help"], ["--help", "kubectl"]),
    (["kubectl"], ["kubectl"]),
    # our option without its value is left to invoke, which names it (kubectl would say "unknown flag")
    (["kubectl", "--lab"], ["kubectl", "--lab"]),
])
def test_kubectl_passes_every_word_after_it_to_kubectl(tmp_path, words, handed):
    assert args_reaching_invoke(tmp_path, *words) == handed
