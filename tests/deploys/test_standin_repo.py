"""The stand-in package source the system suite serves, checked with the host's real apt and bash.

STAND-IN: the kubeadm/kubectl/kubelet packages here are tiny scripts (tests/deploys/standin/), not
Kubernetes. What is real: dpkg-deb packages, a flat repository signed with gpg, apt-get verifying it
through `signed-by` over HTTP, and the scripts' behaviour the deploys rely on (init/join refuse to run
twice (kubeadm's preflight), the join token printed by `token create` is the one `join` records).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.deploys.http_servers import serve_directory
from tests.deploys.standin_repo import StandinRepo, build_standin_repo
from tests.unavailable import skip_or_fail

TOOLS = ("dpkg-deb", "dpkg-scanpackages", "gpg", "apt-get", "bash", "base64", "sha256sum")


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> StandinRepo:
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        skip_or_fail(f"missing {', '.join(missing)}")
    return build_standin_repo(tmp_path_factory.mktemp("repo"), "1.34.2", "1.1")


def apt(tmp: Path, keyring: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp / "parts").mkdir(exist_ok=True)
    (tmp / "status").touch()
    (tmp / "sources.list").write_text(f"deb [signed-by={keyring}] {url} /\n")
    options = [f"Dir::Etc::SourceList={tmp / 'sources.list'}", f"Dir::Etc::SourceParts={tmp / 'parts'}",
               f"Dir::Etc::Parts={tmp / 'parts'}", f"Dir::State={tmp / 'state'}",
               f"Dir::State::status={tmp / 'status'}", f"Dir::Cache={tmp / 'cache'}", "Debug::NoLocking=1",
               "APT::Sandbox::User=root"]
    for d in ("state/lists/partial", "cache/archives/partial"):
        (tmp / d).mkdir(parents=True, exist_ok=True)
    cmd = ["apt-get", "-q", *[x for o in options for x in ("-o", o)], *args]
    return subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, check=False, timeout=60)


def test_apt_accepts_the_signed_repository_and_fetches_the_pinned_versions(repo, tmp_path):
    server = serve_directory(repo.root, "127.0.0.1")
    try:
        url = f"http://127.0.0.1:{server.port}/"
        shutil.copy(repo.key_file, tmp_path / "keyring.asc")
        update = apt(tmp_path, tmp_path / "keyring.asc", url, "update")
        assert update.returncode == 0 and "W:" not in update.stdout + update.stderr, update.stdout + update.stderr
        download = apt(tmp_path, tmp_path / "keyring.asc", url, "download", *(f"{p}={repo.version}" for p in
                                                                              ("kubeadm", "kubelet", "kubectl")))
        assert download.returncode == 0, download.stderr
        assert sorted(p.name.split("_")[0] for p in tmp_path.glob("*.deb")) == ["kubeadm", "kubectl", "kubelet"]
    finally:
        server.stop()


def test_apt_refuses_the_repository_under_another_key(repo, tmp_path):
    other = build_standin_repo(tmp_path / "other", "1.34.2", "1.1")  # same layout, its own key
    server = serve_directory(repo.root, "127.0.0.1")
    try:
        (tmp_path / "apt").mkdir()
        update = apt(tmp_path / "apt", other.key_file, f"http://127.0.0.1:{server.port}/", "update")
        output = update.stdout + update.stderr
        assert "NO_PUBKEY" in output and "is not signed" in output, output
    finally:
        server.stop()


def extract(repo: StandinRepo, package: str, root: Path) -> Path:
    subprocess.run(["dpkg-deb", "-x", str(next((repo.root / "pool").glob(f"{package}_*.deb"))), str(root)],
                   check=True)
    return root / "usr" / "bin" / package


def test_standin_kubeadm_inits_once_and_joins_with_the_minted_token(repo, tmp_path):
    cp_root, worker_root = tmp_path / "cp", tmp_path / "worker"
    kubeadm = extract(repo, "kubeadm", tmp_path / "pkg")
    config = tmp_path / "init.yaml"
    config.write_text('apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n'
                      '  advertiseAddress: "10.213.0.10"\nnodeRegistration:\n  name: "cp"\n')

    def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(kubeadm), *args], env={"STANDIN_ROOT": str(root), "PATH": os.environ["PATH"]},
                              capture_output=True, text=True, check=False)

    assert run(cp_root, "token", "create").returncode == 1  # no admin.conf yet, like the real one
    assert run(cp_root, "init", "--config", str(config)).returncode == 0
    second = run(cp_root, "init", "--config", str(config))
    assert second.returncode == 1 and "/etc/kubernetes/manifests/kube-apiserver.yaml already exists" in second.stderr
    admin = (cp_root / "etc/kubernetes/admin.conf").read_text()
    assert "server: https://10.213.0.10:6443" in admin

    minted = run(cp_root, "token", "create", "--print-join-command").stdout
    token = minted.split("--token ")[1].split()[0]
    join = tmp_path / "join.yaml"
    join.write_text(f'discovery:\n  bootstrapToken:\n    apiServerEndpoint: "10.213.0.10:6443"\n'
                    f'    token: "{token}"\nnodeRegistration:\n  name: "w1"\n')
    assert run(worker_root, "join", "--config", str(join)).returncode == 0
    assert (worker_root / "var/lib/kubeadm-standin/joined-with-token").read_text().strip() == token
    assert run(worker_root, "join", "--config", str(join)).returncode == 1
    assert "system:node:w1" in (worker_root / "etc/kubernetes/kubelet.conf").read_text()
