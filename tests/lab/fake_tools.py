"""Stand-ins for host tools, put on PATH by tests: each answers the queries it is given with the tool's
real output for them, records every call, and fails on anything else.

They model output formats only (what `vagrant --version`, `VBoxManage --version` or macOS's `sysctl -n
hw.memsize` print), not the tools: a call that is not modelled exits 64 with "not modelled" on stderr, so
a test notices when the code under test goes further than it should (e.g. `vagrant status` after a refusal).
"""

from __future__ import annotations

import shlex
from pathlib import Path

# Real outputs of `vagrant --version` ("Vagrant " + version.txt, bin/vagrant's fast path).
VAGRANT_DEBIAN = "Vagrant 2.3.4"  # Debian bookworm's vagrant package, as installed on this machine
VAGRANT_2_4_8 = "Vagrant 2.4.8"
VAGRANT_2_4_9 = "Vagrant 2.4.9"
# Real outputs of `VBoxManage --version`: Oracle's builds print VERSIONrREVISION, Ubuntu's packages
# VERSION_UbunturREVISION; with the kernel driver not loaded, a multi-line WARNING comes first.
VBOX_7_0_UBUNTU = "7.0.16_Ubuntur162802"
VBOX_7_1 = "7.1.4r165100"
VBOX_7_2_UBUNTU = "7.2.6_Ubuntur172322"
VBOX_7_1_NO_DRIVER = """\
WARNING: The vboxdrv kernel module is not loaded. Either there is no module
         available for the current kernel (6.8.0-45-generic) or it failed to
         load. Please recompile the kernel module and install it by

           sudo /sbin/vboxconfig

         You will not be able to start VMs until this problem is fixed.
7.1.4r165100"""
VBOX_7_3_HYPOTHETICAL = "7.3.0r170000"  # no such release yet: a VirtualBox newer than the known pairs
# macOS: `sysctl -n hw.memsize` prints the physical memory in bytes (here a 16 GB Mac).
MACOS_MEMSIZE = "17179869184"


def fake_tool(bin_dir: Path, name: str, answers: dict[str, str], models: str) -> Path:
    """Write `bin_dir/name` answering each argument string in `answers` with its output; calls go to
    `bin_dir/calls` as "name args" lines."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    calls = shlex.quote(str(bin_dir / "calls"))
    cases = "".join(f"  {shlex.quote(args)}) printf '%s\\n' {shlex.quote(output)} ;;\n"
                    for args, output in answers.items())
    script = bin_dir / name
    script.write_text(
        "#!/bin/sh\n"
        f"# STAND-IN for {name}: {models}\n"
        f'printf "%s\\n" "{name} $*" >> {calls}\n'
        'case "$*" in\n'
        f"{cases}"
        f'  *) echo "stand-in {name}: not modelled: $*" >&2; exit 64 ;;\n'
        "esac\n")
    script.chmod(0o755)
    return script


def calls(bin_dir: Path) -> list[str]:
    path = bin_dir / "calls"
    return path.read_text().splitlines() if path.exists() else []


def fake_vagrant_and_virtualbox(bin_dir: Path, vagrant: str, virtualbox: str) -> None:
    fake_tool(bin_dir, "vagrant", {"--version": vagrant}, f"`vagrant --version` of a host with {vagrant}")
    fake_tool(bin_dir, "VBoxManage", {"--version": virtualbox},
              f"`VBoxManage --version` of a host with VirtualBox {virtualbox.splitlines()[-1]}")
