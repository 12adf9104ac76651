"""A signed apt repository of STAND-IN kubeadm/kubelet/kubectl packages, for machines that can neither
download Kubernetes packages nor run a kubelet (the system suite's lxc lab).

The packages are tiny .debs built with dpkg-deb from the scripts in tests/deploys/standin/ (each script's
header says what it models and what not): kubeadm writes the files and cluster objects the real one
leaves, kubectl (Python, so the package depends on python3-yaml) keeps the objects it applied and answers
NotFound for any other, kubelet only sleeps. The repository has pkgs.k8s.io's flat layout (Packages,
Release, InRelease, Release.key at its root), signed with a throwaway key, so the nodes' apt verifies
it through the keyring and `signed-by` exactly as it would the real one: the same layout is what an
air-gapped lab's `package_source` points at.
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path

STANDIN_DIR = Path(__file__).resolve().parent / "standin"
MAINTAINER = "kubelab tests <standin@kubelab.invalid>"
KEY_UID = "kubelab stand-in Kubernetes packages <standin@kubelab.invalid>"


class StandinBuildError(RuntimeError):
    pass


@dataclass
class StandinRepo:
    root: Path
    version: str  # Debian version of every package, e.g. 1.34.2-1.1
    key_file: Path  # ASCII-armoured public key (Release.key)


def _run(*args: str, cwd: Path | None = None, env: dict | None = None) -> str:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise StandinBuildError(f"`{' '.join(args)}` failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def host_architecture() -> str:
    return _run("dpkg", "--print-architecture").strip()


def _script(name: str, kube_version: str) -> str:
    return (STANDIN_DIR / name).read_text().replace("@VERSION@", kube_version)


def build_deb(out_dir: Path, package: str, version: str, arch: str, files: dict[str, tuple[str, int]],
              depends: str = "") -> Path:
    """files: absolute path in the package -> (content, mode); depends: a Depends field, if any."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / package
        (tree / "DEBIAN").mkdir(parents=True)
        for path, (content, mode) in files.items():
            target = tree / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
            target.chmod(mode)
        (tree / "DEBIAN" / "control").write_text(
            f"Package: {package}\nVersion: {version}\nArchitecture: {arch}\nMaintainer: {MAINTAINER}\n"
            + (f"Depends: {depends}\n" if depends else "") +
            f"Section: admin\nPriority: optional\n"
            f"Description: STAND-IN {package} for kubelab's system tests\n"
            " Records its invocations; runs no Kubernetes component. Never install it on a real machine.\n")
        deb = out_dir / f"{package}_{version}_{arch}.deb"
        _run("dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(tree), str(deb))
        return deb


def _release(root: Path, files: list[str], arch: str) -> str:
    lines = ["Origin: kubelab-standin", "Label: kubelab stand-in Kubernetes packages",
             f"Date: {formatdate(usegmt=True)}", f"Architectures: {arch}"]
    for field, algo in (("MD5Sum", hashlib.md5), ("SHA256", hashlib.sha256)):
        lines.append(f"{field}:")
        for name in files:
            data = (root / name).read_bytes()
            lines.append(f" {algo(data).hexdigest()} {len(data)} {name}")
    return "\n".join(lines) + "\n"


def _sign(root: Path) -> None:
    """Sign Release with a throwaway key (InRelease + Release.gpg) and publish the key as Release.key."""
    home = Path(tempfile.mkdtemp(prefix="kl-gpg-"))  # short path: gpg-agent's socket lives there
    env = {"GNUPGHOME": str(home), "PATH": "/usr/bin:/bin"}
    try:
        _run("gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", "", "--quick-gen-key",
             KEY_UID, "ed25519", "sign", "2d", env=env)
        _run("gpg", "--batch", "--yes", "--armor", "--output", str(root / "Release.key"), "--export", KEY_UID,
             env=env)
        _run("gpg", "--batch", "--yes", "--clearsign", "--output", str(root / "InRelease"), str(root / "Release"),
             env=env)
        _run("gpg", "--batch", "--yes", "--armor", "--detach-sign", "--output", str(root / "Release.gpg"),
             str(root / "Release"), env=env)
    finally:
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], env=env, capture_output=True, check=False)
        shutil.rmtree(home, ignore_errors=True)


def build_standin_repo(root: Path, kube_version: str, revision: str) -> StandinRepo:
    """Build the three stand-in packages at `kube_version-revision` and a signed flat repository in `root`."""
    arch = host_architecture()
    version = f"{kube_version}-{revision}"
    pool = root / "pool"
    pool.mkdir(parents=True, exist_ok=True)
    build_deb(pool, "kubeadm", version, arch, {"/usr/bin/kubeadm": (_script("kubeadm", kube_version), 0o755)})
    build_deb(pool, "kubectl", version, arch, {"/usr/bin/kubectl": (_script("kubectl", kube_version), 0o755)},
              depends="python3, python3-yaml")  # the kubectl stand-in is Python and reads YAML manifests
    build_deb(pool, "kubelet", version, arch, {
        "/usr/bin/kubelet": (_script("kubelet", kube_version), 0o755),
        "/lib/systemd/system/kubelet.service": (_script("kubelet.service", kube_version), 0o644),
    })
    packages = _run("dpkg-scanpackages", "--multiversion", "pool", "/dev/null", cwd=root)
    (root / "Packages").write_text(packages)
    (root / "Packages.gz").write_bytes(gzip.compress(packages.encode()))
    (root / "Release").write_text(_release(root, ["Packages", "Packages.gz"], arch))
    _sign(root)
    return StandinRepo(root, version, root / "Release.key")
