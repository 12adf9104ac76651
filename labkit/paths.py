"""Where a lab keeps its state on the host: one folder per lab, `.lab/<lab name>/` in the project.

Vagrant's own state lives in it too (VAGRANT_DOTFILE_PATH), so two labs (the default one and the system
test's) never share machines, and `down` removes everything the lab left on the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class LabPaths:
    state_dir: Path

    @classmethod
    def for_lab(cls, lab_name: str, root: Path = PROJECT_ROOT) -> LabPaths:
        return cls(root / ".lab" / lab_name)

    @property
    def vagrant_dotfile(self) -> Path:
        return self.state_dir / "vagrant"

    @property
    def ssh_details(self) -> Path:
        """SSH details of every machine as `vagrant ssh-config` gave them, as JSON (read by inventory/)."""
        return self.state_dir / "ssh.json"

    @property
    def known_hosts(self) -> Path:
        """The lab's own known_hosts: reset when machines are re-created, never the user's."""
        return self.state_dir / "known_hosts"

    @property
    def kubeconfig(self) -> Path:
        """The cluster's admin kubeconfig exported to the host (context named after the lab)."""
        return self.state_dir / "kubeconfig"
