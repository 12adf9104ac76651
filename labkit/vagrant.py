"""Drive the lab's machines with Vagrant (through python-vagrant).

`VagrantLab(lab, lab_file)` runs `vagrant` in the project folder with the lab's definition file and its own
state folder, so the Vagrantfile sees exactly this lab. It brings machines up, reports their state,
destroys them, saves and restores snapshots, and records each machine's SSH details for the inventory.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeVar

from packaging.version import Version

from labdef.errors import UserError
from labdef.lab import Lab
from labkit.paths import PROJECT_ROOT, LabPaths

Progress = Callable[[str], None]
T = TypeVar("T")

VAGRANT_INSTALL_HINT = (
    "install Vagrant from HashiCorp's own packages (https://developer.hashicorp.com/vagrant/install: apt and "
    "yum repositories, macOS and Windows installers; Debian's and Ubuntu's vagrant 2.3 stops at VirtualBox 7.0), "
    "then run ./lab doctor"
)
# VirtualBox minor -> the first Vagrant release with a driver for it (Vagrant's CHANGELOG.md: "provider/virtualbox:
# Add support for VirtualBox 7.2" in 2.4.9, 7.1 in 2.4.2, 7.0 in 2.3.2, 6.1 in 2.2.7, 6.0 in 2.2.1). Vagrant
# refuses a VirtualBox it has no driver for; older ones are known to every Vagrant in use.
VAGRANT_FOR_VIRTUALBOX = {
    (6, 0): Version("2.2.1"),
    (6, 1): Version("2.2.7"),
    (7, 0): Version("2.3.2"),
    (7, 1): Version("2.4.2"),
    (7, 2): Version("2.4.9"),
}
PROVIDER_TOOLS = {
    # provider -> (command that proves it is installed, what to tell the user)
    "virtualbox": ("VBoxManage", ("install VirtualBox 7 (https://www.virtualbox.org/wiki/Downloads), or on "
                                  "a Linux host set provider.name: lxc in the lab definition")),
    "lxc": ("lxc-create", ("install lxc and the vagrant-lxc plugin (Debian/Ubuntu: apt-get install "
                           "--no-install-recommends lxc vagrant-lxc)")),
}


class ToolMissing(UserError):
    """A program the lab needs is not installed; the message says what to install."""


class ToolsMismatch(UserError):
    """Vagrant and VirtualBox are installed but this Vagrant cannot drive this VirtualBox."""


class VagrantFailed(UserError):
    """`vagrant` ran and failed; the message carries its last output lines."""


@dataclass(frozen=True)
class SshDetails:
    host: str
    port: int
    user: str
    key_file: str


def parse_ssh_config(text: str) -> dict[str, SshDetails]:
    """Turn `vagrant ssh-config` output (one `Host` block per machine) into SSH details by machine name."""
    blocks: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition(" ")
        value = value.strip().strip('"')
        if key.lower() == "host":
            current = blocks.setdefault(value, {})
        elif current is not None:
            # IdentityFile may repeat; the first one is the machine's own key.
            current.setdefault(key.lower(), value)
    details = {}
    for name, fields in blocks.items():
        try:
            details[name] = SshDetails(
                host=fields["hostname"], port=int(fields.get("port", "22")),
                user=fields["user"], key_file=fields["identityfile"],
            )
        except KeyError as missing:
            raise VagrantFailed(f"vagrant ssh-config gave no {missing} for machine {name!r}") from None
    return details


def require_tools(provider: str) -> None:
    """Fail with one clear message when Vagrant or the provider is missing."""
    if not shutil.which("vagrant"):
        raise ToolMissing(f"Vagrant is not installed (no `vagrant` on PATH): {VAGRANT_INSTALL_HINT}")
    tool, hint = PROVIDER_TOOLS[provider]
    if not shutil.which(tool):
        raise ToolMissing(f"the {provider} provider is not available (no `{tool}` on PATH): {hint}")


def tool_output(command: list[str]) -> str:
    """What a short query (`vagrant --version`) prints (stdout, else stderr); "" when it is missing or fails."""
    try:
        out = subprocess.run(command, check=False, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (out.stdout or out.stderr).strip() if out.returncode == 0 else ""


def vagrant_version(output: str) -> Version | None:
    """From `vagrant --version`: "Vagrant 2.3.7" (a development build: "Vagrant 2.4.10.dev")."""
    found = re.search(r"^Vagrant (\d+\.\d+\.\d+(?:\.dev)?)", output, re.MULTILINE)
    return Version(found[1]) if found else None


def virtualbox_version(output: str) -> Version | None:
    """From `VBoxManage --version`: "7.1.4r165100", "7.0.16_Ubuntur162802" (Ubuntu's build), possibly after
    WARNING lines about the kernel modules."""
    found = re.search(r"^(\d+\.\d+\.\d+)(?:_\w*)?r\d+", output, re.MULTILINE)
    return Version(found[1]) if found else None


def check_virtualbox_pair(vagrant: Version, virtualbox: Version) -> str:
    """Refuse (ToolsMismatch, naming both versions and the fix) a Vagrant that cannot drive this VirtualBox.

    Returns a warning for a VirtualBox newer than the pairs known here ("" otherwise): Vagrant may or may not
    know it yet, but one that does not even know the newest known minor certainly does not.
    """
    minor = (virtualbox.major, virtualbox.minor)
    newest = max(VAGRANT_FOR_VIRTUALBOX)
    if minor in VAGRANT_FOR_VIRTUALBOX:
        needed, likely = VAGRANT_FOR_VIRTUALBOX[minor], ""
    elif minor > newest:
        needed, likely = VAGRANT_FOR_VIRTUALBOX[newest], f" (the first to know {newest[0]}.{newest[1]}), likely newer"
    else:
        return ""  # older than the table: every Vagrant in use drives it
    if vagrant < needed:
        raise ToolsMismatch(
            f"Vagrant {vagrant} cannot drive VirtualBox {virtualbox}: VirtualBox {minor[0]}.{minor[1]} needs "
            f"Vagrant {needed} or later{likely}. Install Vagrant from HashiCorp's own packages "
            "(https://developer.hashicorp.com/vagrant/install; Debian's and Ubuntu's vagrant 2.3 stops at "
            "VirtualBox 7.0), or a VirtualBox this Vagrant knows, then run ./lab doctor")
    if likely:
        return (f"VirtualBox {virtualbox} is newer than the pairs kubelab knows (VirtualBox "
                f"{newest[0]}.{newest[1]} needs Vagrant {needed}+); if Vagrant {vagrant} says it does not support "
                "this VirtualBox, upgrade Vagrant (https://developer.hashicorp.com/vagrant/install)")
    return ""


def require_virtualbox_pair() -> str:
    """Read both tools' versions and check the pair (see check_virtualbox_pair); returns its warning."""
    versions = []
    for command, parse in ((["vagrant", "--version"], vagrant_version),
                           (["VBoxManage", "--version"], virtualbox_version)):
        output = tool_output(command)
        version = parse(output)
        if version is None:
            raise ToolMissing(f"`{' '.join(command)}` printed no version ({output or 'no output'!r}): "
                              "reinstall it, then run ./lab doctor")
        versions.append(version)
    return check_virtualbox_pair(*versions)


def _merged_stderr():
    """python-vagrant output context: stderr joins stdout, so a failure's tail shows Vagrant's error."""
    return contextlib.nullcontext(subprocess.STDOUT)


def _captured_stderr():
    """For commands whose stdout is parsed: keep stderr apart, on the exception if the command fails."""
    return contextlib.nullcontext(subprocess.PIPE)


class VagrantLab:
    def __init__(self, lab: Lab, lab_file: Path, progress: Progress | None = None,
                 root: Path = PROJECT_ROOT):
        self.lab = lab
        self.lab_file = Path(lab_file).resolve()
        self.paths = LabPaths.for_lab(lab.name, root)
        self.root = root
        self.progress = progress or (lambda line: None)

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            KUBELAB_FILE=str(self.lab_file),
            KUBELAB_PYTHON=sys.executable,
            VAGRANT_DOTFILE_PATH=str(self.paths.vagrant_dotfile),
            VAGRANT_DEFAULT_PROVIDER=self.lab.provider.name,
        )
        return env

    def _client(self, streaming: bool = False):
        require_tools(self.lab.provider.name)
        import vagrant  # imported late: python-vagrant prints a warning at import when vagrant is absent

        self.paths.state_dir.mkdir(parents=True, exist_ok=True)
        err_cm = _merged_stderr if streaming else _captured_stderr
        return vagrant.Vagrant(root=str(self.root), env=self.env, err_cm=err_cm)

    def _run(self, *args: str) -> None:
        """Run `vagrant ARGS`, passing each output line to `progress`; on failure raise with the last lines.

        python-vagrant's public methods take one machine name or none and lack flags we need (several
        machines, destroy --force, snapshot --force): its streaming runner keeps our env and cwd.
        """
        tail: deque[str] = deque(maxlen=20)
        try:
            for line in self._client(streaming=True)._stream_vagrant_command(list(args)):
                tail.append(line.rstrip())
                self.progress(tail[-1])
        except subprocess.CalledProcessError as err:
            output = "\n".join(tail)
            raise VagrantFailed(f"`vagrant {' '.join(args)}` failed (exit {err.returncode}):\n{output}") from None

    def _query(self, what: str, call: Callable[[], T]) -> T:
        try:
            return call()
        except subprocess.CalledProcessError as err:
            detail = (err.stderr or b"").decode(errors="replace").strip()
            raise VagrantFailed(f"`vagrant {what}` failed (exit {err.returncode}):\n{detail}") from None

    # -- lifecycle ---------------------------------------------------------------------------------

    def status(self) -> dict[str, str]:
        """Machine name -> Vagrant state (running, not_created, poweroff, stopped, ...)."""
        client = self._client()
        return {s.name: s.state for s in self._query("status", client.status)}

    def up(self) -> None:
        """Create or start every machine and record their SSH details.

        One `vagrant up` for all of them: Vagrant runs machines in parallel where the provider allows it.
        """
        if "not_created" in self.status().values():
            # New machines have new host keys on the same forwarded ports: start the lab's known_hosts anew.
            self.paths.known_hosts.unlink(missing_ok=True)
        self._run("up", "--no-provision", f"--provider={self.lab.provider.name}", *(n.name for n in self.lab.nodes))
        self.record_ssh_details()

    def destroy(self) -> None:
        self._run("destroy", "--force")
        self.paths.ssh_details.unlink(missing_ok=True)
        self.paths.known_hosts.unlink(missing_ok=True)

    def record_ssh_details(self) -> None:
        client = self._client()
        details = parse_ssh_config(self._query("ssh-config", client.ssh_config))
        self.paths.ssh_details.write_text(json.dumps({k: asdict(v) for k, v in details.items()}, indent=2))

    # -- snapshots (all machines at once, as `vagrant snapshot save NAME` does) -----------------------

    def snapshot_save(self, name: str) -> None:
        self._run("snapshot", "save", "--force", name)

    def snapshot_restore(self, name: str) -> None:
        self._run("snapshot", "restore", "--no-provision", name)
        # A restored machine may predate a re-creation, and with it the host key we last saw.
        self.paths.known_hosts.unlink(missing_ok=True)
        self.record_ssh_details()
