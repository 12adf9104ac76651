"""What the tutorial tests share: a tutorial's blocks read from its Markdown, its files written into a folder
outside the repository (the user's ~/my-lab) with its lab entry applied to a copy of a lab definition, commands
run as the user runs them, and (API tier) the scheduler deployed from that lab as the placement suites stand
in for deploy-scheduler.

A tutorial marks what the reader writes: ``<!-- file: PATH -->`` before a code block whose body is that file (a
file may be shown in several consecutive blocks, each marked with its PATH, reassembled in order), and
``<!-- lab: PATH -->`` before the YAML whose keys replace those of the user's lab.yaml."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from labdef.lab import parse_lab
from labkit.paths import PROJECT_ROOT

FILE_BLOCK = re.compile(r"<!-- file: (?P<path>\S+) -->\n```\w*\n(?P<body>.*?)```\n", re.DOTALL)
LAB_BLOCK = re.compile(r"<!-- lab: (?P<path>\S+) -->\n```yaml\n(?P<body>.*?)```\n", re.DOTALL)


@dataclass(frozen=True)
class Tutorial:
    markdown: Path

    def files(self) -> dict[str, str]:
        """The files the tutorial has the reader write, by path inside ~/my-lab; a file shown in several
        blocks is their bodies joined in the order they appear."""
        files: dict[str, str] = {}
        for match in FILE_BLOCK.finditer(self.markdown.read_text()):
            files[match["path"]] = files.get(match["path"], "") + match["body"]
        return files

    def lab_entry(self) -> dict:
        """What the tutorial puts in the user's lab definition (it replaces those keys of the copied lab.yaml)."""
        match = LAB_BLOCK.search(self.markdown.read_text())
        assert match, f"{self.markdown}: no <!-- lab: ... --> block"
        return yaml.safe_load(match["body"])

    def differences(self, example: Path) -> list[str]:
        """The tutorial's files that are not, byte for byte, the example folder's (paths start with its name)."""
        return [f"{relative} differs from examples/{relative}" for relative, body in self.files().items()
                if not (example.parent / relative).is_file() or (example.parent / relative).read_text() != body]

    def write_my_lab(self, root: Path, lab: dict) -> MyLab:
        folder = root / "my-lab"
        for relative, body in self.files().items():
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
        lab_file = folder / "lab.yaml"
        lab_file.write_text(yaml.safe_dump(with_entry(lab, self.lab_entry()), sort_keys=False))
        assert PROJECT_ROOT not in folder.resolve().parents
        return MyLab(folder, lab_file)


def with_entry(lab: dict, entry: dict) -> dict:
    """The copied lab definition with the tutorial's scheduler.plugins, scheduler.profile and
    placement.scenarios in place of its own."""
    lab = dict(lab)
    lab["scheduler"] = {**lab.get("scheduler", {}), **entry["scheduler"]}
    lab["placement"] = {**lab.get("placement", {}), **entry["placement"]}
    return lab


@dataclass
class MyLab:
    folder: Path  # ~/my-lab: the user's folder, outside the repository
    lab_file: Path


def default_lab() -> dict:
    """kubelab's lab.yaml, as the tutorial has the reader copy it."""
    return yaml.safe_load((PROJECT_ROOT / "lab.yaml").read_text())


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "COLUMNS": "200"}, stdin=subprocess.DEVNULL)


def render_only(my_lab: MyLab, out: Path) -> subprocess.CompletedProcess[str]:
    """`./lab deploy-scheduler --lab ~/my-lab/lab.yaml --render-only OUT`."""
    return run([str(PROJECT_ROOT / "lab"), "deploy-scheduler", "--lab", str(my_lab.lab_file), "--render-only",
                str(out)], PROJECT_ROOT)


@contextmanager
def only_my_lab_imported(my_lab: MyLab) -> Iterator[None]:
    """While it lasts, this process holds no module named like a folder of ~/my-lab: pytest imported the
    finished examples under those names when it collected their tests (examples/node_cost as `node_cost`), which
    a user's deploy-scheduler process never does. Those modules are put back afterwards."""
    names = {path.name for path in my_lab.folder.iterdir() if path.is_dir()}

    def ours() -> list[str]:
        return [m for m in sys.modules if m.split(".")[0] in names]

    saved = {m: sys.modules.pop(m) for m in ours()}
    try:
        yield
    finally:
        for module in ours():
            del sys.modules[module]
        sys.modules.update(saved)


@contextmanager
def deployed(cluster, my_lab: MyLab, mode: str) -> Iterator[None]:
    """`./lab deploy-scheduler --lab ~/my-lab/lab.yaml` in ``mode``, as the placement suites stand in for it
    (the plugin folders' CRDs, the ConfigMap, the Deployment, and the real scheduler process)."""
    from tests.placement.extender_driver import ExtenderDeploymentStandIn
    from tests.placement.standins import DeploymentStandIn, deploy_scheduler

    data = yaml.safe_load(my_lab.lab_file.read_text())
    data["scheduler"]["mode"] = mode
    my_lab.lab_file.write_text(yaml.safe_dump(data, sort_keys=False))
    lab = parse_lab(data, str(my_lab.lab_file), base_dir=my_lab.folder)
    with only_my_lab_imported(my_lab):
        deploy_scheduler(cluster.server, lab)  # loads the user's folders in this process, as deploy-scheduler does
    standin = DeploymentStandIn if mode == "standalone" else ExtenderDeploymentStandIn
    with standin(cluster.server, lab, cluster.kubeconfig, cluster.workdir):
        yield
