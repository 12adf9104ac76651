"""`./lab --version`: the project's version and the versions the lab definition pins.

    python -m labkit.version [--lab FILE]     (what ./lab --version runs)
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys

from labdef import versions
from labdef.lab import DEFAULT_LAB_FILE, Lab, LabError, load_lab


def version_lines(lab: Lab, lab_file: str) -> list[str]:
    k8s = lab.kubernetes
    containerd = lab.containerd.version or (
        f"the distribution's {lab.containerd.package} package (unpinned"
        + (f"; Kubernetes {k8s.minor} needs {versions.containerd_floors(k8s.minor_number)})"
           if k8s.minor_number in versions.KUBERNETES else ")"))
    support = versions.KUBERNETES_RELEASES.get(k8s.minor_number)
    box = lab.provider.box + (f" (version {lab.provider.box_version})" if lab.provider.box_version else "")
    return [
        f"kubelab {importlib.metadata.version('kubelab')}",
        f"lab {lab.name} ({lab_file}):",
        f"  kubernetes  {k8s.version} (packages {k8s.package_version}"
        + (f"; upstream patches {k8s.minor} until {support.end_of_life})" if support else ")"),
        f"  calico      {lab.cni.calico_version}",
        f"  containerd  {containerd}",
        f"  box         {box}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./lab --version", description=__doc__.split("\n")[0])
    parser.add_argument("--lab", default=os.environ.get("KUBELAB_FILE") or str(DEFAULT_LAB_FILE),
                        help="lab definition file (default: lab.yaml, or $KUBELAB_FILE)")
    args = parser.parse_args(argv)
    try:
        lab = load_lab(args.lab)
    except LabError as err:
        print(f"kubelab {importlib.metadata.version('kubelab')}", file=sys.stdout)
        print(f"error: {err}", file=sys.stderr)
        return 2
    print("\n".join(version_lines(lab, args.lab)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
