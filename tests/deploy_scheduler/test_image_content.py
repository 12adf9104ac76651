"""What the image is made of (labkit.image), without building it: content tag, runtime dependencies,
the Containerfile's pinned base, archive reading and build-tool detection."""

from __future__ import annotations

import io
import json
import shutil
import stat
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from labdef.lab import LabError, parse_lab
from labkit.image import (
    CONTAINERFILE,
    BaseImage,
    Builder,
    BuildPlan,
    ImageError,
    archive_image_id,
    content_tag,
    default_base,
    find_builder,
    lock_requirements,
    runtime_requirements,
    scheduler_sources,
)

BASE = BaseImage("localhost/base:1", "3.11")
LOCK = ["kubernetes==36.0.3", "urllib3==2.8.0"]


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    root = tmp_path / "scheduler"
    root.mkdir()
    (root / "__init__.py").write_text('__version__ = "9.9.9"\n')
    (root / "app.py").write_text("import yaml\nfrom kubernetes import client\nfrom . import app\n")
    return root


def tag(root: Path, lock: list[str] = LOCK, base: BaseImage = BASE, platform: str = "linux/amd64") -> str:
    return content_tag(base, platform, lock, sources=scheduler_sources(root), source_root=root)


def test_tag_is_stable_and_names_the_scheduler_version(sources: Path) -> None:
    first = tag(sources)
    assert first == tag(sources)
    assert first.startswith("9.9.9-") and len(first.split("-")[1]) == 12


def test_tag_changes_with_code_dependencies_base_and_platform(sources: Path) -> None:
    before = tag(sources)
    assert tag(sources, lock=["kubernetes==36.0.2", "urllib3==2.8.0"]) != before
    assert tag(sources, base=BaseImage("localhost/base:2", "3.11")) != before
    assert tag(sources, platform="linux/arm64") != before
    (sources / "app.py").write_text((sources / "app.py").read_text() + "# changed\n")
    assert tag(sources) != before


def test_tag_ignores_bytecode_caches(sources: Path) -> None:
    before = tag(sources)
    (sources / "__pycache__").mkdir()
    (sources / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0")
    assert tag(sources) == before


def test_runtime_requirements_come_from_the_imports_and_the_project_pins(sources: Path) -> None:
    assert runtime_requirements(scheduler_sources(sources)) == ["kubernetes==36.0.3", "pyyaml==6.0.3"]


def test_an_import_nobody_provides_is_named(sources: Path) -> None:
    (sources / "extra.py").write_text("import no_such_module_anywhere\n")
    with pytest.raises(ImageError, match="no_such_module_anywhere"):
        runtime_requirements(scheduler_sources(sources))


def test_lock_pins_the_transitive_dependencies() -> None:
    lock = lock_requirements(["kubernetes==36.0.3"], "3.11")
    names = {line.split("==")[0] for line in lock}
    assert {"kubernetes", "urllib3", "certifi", "python-dateutil"} <= names
    assert all("==" in line for line in lock)
    assert "google-auth" not in names  # only behind an extra


def test_the_real_scheduler_needs_its_pinned_client_and_pydantic() -> None:
    reqs = runtime_requirements()
    assert "kubernetes==36.0.3" in reqs and "pydantic==2.14.3" in reqs


def test_containerfile_pins_its_base_by_digest_and_runs_as_non_root() -> None:
    base = default_base()
    assert "@sha256:" in base.ref and len(base.ref.split("@sha256:")[1]) == 64
    assert base.python_version == "3.12" and "python:3.12" in base.ref
    text = CONTAINERFILE.read_text()
    user = [line.split()[1] for line in text.splitlines() if line.startswith("USER ")]
    assert user and not user[-1].startswith(("0", "root"))


def _archive(path: Path, manifest: object) -> Path:
    data = json.dumps(manifest).encode()
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


def test_archive_image_id_reads_the_config_digest(tmp_path: Path) -> None:
    hexd = "ab" * 32
    legacy = _archive(tmp_path / "a.tar", [{"Config": f"{hexd}.json", "RepoTags": ["x:1"], "Layers": []}])
    oci = _archive(tmp_path / "b.tar", [{"Config": f"blobs/sha256/{hexd}", "RepoTags": ["x:1"], "Layers": []}])
    assert archive_image_id(legacy) == archive_image_id(oci) == f"sha256:{hexd}"


def test_a_multi_image_archive_is_refused(tmp_path: Path) -> None:
    entry = {"Config": f"{'ab' * 32}.json", "RepoTags": ["x:1"], "Layers": []}
    with pytest.raises(ImageError, match="exactly one"):
        archive_image_id(_archive(tmp_path / "m.tar", [entry, entry]))


def test_an_archive_is_reused_only_when_it_holds_that_exact_reference(tmp_path: Path) -> None:
    entry = {"Config": f"{'ab' * 32}.json", "Layers": []}

    def plan(archive: Path) -> BuildPlan:
        return BuildPlan(tmp_path / "context", "x:1", archive, BASE, "linux/amd64")

    assert plan(_archive(tmp_path / "same.tar", [{**entry, "RepoTags": ["x:1"]}])).done
    assert not plan(_archive(tmp_path / "other.tar", [{**entry, "RepoTags": ["x:2"]}])).done
    assert not plan(_archive(tmp_path / "two.tar", [{**entry, "RepoTags": ["x:1"]}] * 2)).done
    assert not plan(tmp_path / "missing.tar").done
    truncated = tmp_path / "truncated.tar"
    truncated.write_bytes((tmp_path / "same.tar").read_bytes()[:100])
    assert not plan(truncated).done


def test_a_docker_client_without_a_daemon_is_not_a_builder(tmp_path: Path, monkeypatch) -> None:
    """Stand-in executables on PATH: a `docker` whose daemon is unreachable, a working `buildah`."""
    for name, code in (("docker", 1), ("buildah", 0)):
        exe = tmp_path / name
        exe.write_text(f"#!/bin/sh\nexit {code}\n")
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert shutil.which("docker") and not Builder("docker").usable()
    found = find_builder()
    assert found is not None and found.name == "buildah"
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert find_builder() is None


def _lab_data() -> dict:
    return yaml.safe_load(Path(__file__).resolve().parents[2].joinpath("lab.yaml").read_text())


@pytest.mark.parametrize(("field", "value", "message"), [
    ("image", "Localhost/Scheduler:1", "scheduler.image"),
    ("cpu_request", "a lot", "scheduler.cpu_request"),
    ("port", 80, "scheduler.port"),
])
def test_lab_rejects_bad_scheduler_deploy_fields(field: str, value: object, message: str) -> None:
    data = _lab_data()
    data["scheduler"][field] = value
    with pytest.raises(LabError, match=message):
        parse_lab(data, "lab.yaml")


def test_lab_rejects_several_replicas_without_leader_election() -> None:
    data = _lab_data()
    data["scheduler"].update(replicas=2, leader_elect=False)
    with pytest.raises(LabError, match="scheduler.replicas"):
        parse_lab(data, "lab.yaml")
    data["scheduler"]["leader_elect"] = True
    assert parse_lab(data, "lab.yaml")


def test_deploy_reuses_a_built_archive_without_probing_build_tools(tmp_path: Path, monkeypatch) -> None:
    """No build tool is asked (`docker info` and friends) when the archive for this content exists."""
    import labkit.image
    from labkit import lab_plugins
    from labkit.scheduler_deploy.image_delivery import ensure_image

    lab = parse_lab(_lab_data(), "lab.yaml")
    plan = labkit.image.plan_build(tmp_path, lab.scheduler.image, plugins=lab_plugins.folders(lab))
    _archive(plan.archive, [{"Config": f"{'cd' * 32}.json", "RepoTags": [plan.ref], "Layers": []}])

    def no_probe(*args: object) -> None:
        raise AssertionError("find_builder was called although the archive was already built")

    monkeypatch.setattr(labkit.image, "find_builder", no_probe)
    lines: list[str] = []
    image = ensure_image(lab, inventory=None, out_dir=tmp_path, echo=lines.append)
    assert (image.builder, image.ref, image.image_id) == ("cached", plan.ref, f"sha256:{'cd' * 32}")
    assert lines == [f"image {plan.ref} already built: {plan.archive}"]


def test_wheels_are_downloaded_once_per_exact_lock(tmp_path: Path) -> None:
    """The inner loop changes sources, not pins: a second context with the same lock links the wheels it
    already has instead of running pip again; another lock (or Python) downloads anew."""
    from labkit.image import provide_wheels

    calls: list[list[str]] = []

    def pip(cmd, **kwargs):  # records the call and leaves one wheel where pip download would
        calls.append(cmd)
        dest = Path(cmd[cmd.index("--dest") + 1])
        (dest / f"pkg-{len(calls)}-py3-none-any.whl").write_text("wheel")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    def context(name: str, lock: str) -> Path:
        path = tmp_path / name
        path.mkdir()
        (path / "requirements.lock").write_text(lock)
        return path

    first = context("first", "kubernetes==36.0.3\n")
    provide_wheels(first, "3.12", "linux/amd64", run=pip)
    second = context("second", "kubernetes==36.0.3\n")
    provide_wheels(second, "3.12", "linux/amd64", run=pip)
    assert len(calls) == 1
    assert [p.name for p in (second / "wheels").iterdir()] == ["pkg-1-py3-none-any.whl"]
    provide_wheels(context("third", "kubernetes==36.0.4\n"), "3.12", "linux/amd64", run=pip)
    provide_wheels(context("fourth", "kubernetes==36.0.3\n"), "3.11", "linux/amd64", run=pip)
    assert len(calls) == 3


def test_a_failed_wheel_download_is_not_kept(tmp_path: Path) -> None:
    from labkit.image import ImageError, provide_wheels

    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "requirements.lock").write_text("kubernetes==36.0.3\n")
    failing = lambda cmd, **kwargs: subprocess.CompletedProcess(cmd, 1, "", "no index")
    with pytest.raises(ImageError, match="no index"):
        provide_wheels(tmp_path / "ctx", "3.12", "linux/amd64", run=failing)
    assert not list(tmp_path.glob("wheels-*"))


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    """A user's plugin folder outside the repository."""
    folder = tmp_path / "mine" / "gpu_aware"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("PLUGINS = []\n")
    (folder / "requirements.txt").write_text("# what the plugin needs\nhumanize==4.9.0\n\nrich==13.7.1  # pinned\n")
    return folder


def test_tag_covers_the_plugin_folders_and_their_requirements(sources: Path, plugin: Path) -> None:
    def with_plugin() -> str:
        return content_tag(BASE, "linux/amd64", LOCK, sources=scheduler_sources(sources),
                           source_root=sources, plugins=[plugin])

    before = with_plugin()
    assert before != tag(sources)  # the folder counts
    assert with_plugin() == before
    (plugin / "__init__.py").write_text("PLUGINS = []  # changed\n")
    assert with_plugin() != before  # changing a plugin file changes the tag
    changed = with_plugin()
    (plugin / "__pycache__").mkdir()
    (plugin / "__pycache__" / "x.cpython-312.pyc").write_bytes(b"\0")
    (plugin / ".x.swp").write_text("swap")
    assert with_plugin() == changed  # caches and hidden files are not shipped


def test_plugin_requirements_join_the_lock_and_the_tag(plugin: Path) -> None:
    from labkit.image import with_plugin_requirements

    assert with_plugin_requirements(LOCK, [plugin]) == ["humanize==4.9.0", "kubernetes==36.0.3", "rich==13.7.1",
                                                        "urllib3==2.8.0"]
    (plugin / "requirements.txt").write_text("urllib3==2.7.0\n")
    with pytest.raises(ImageError, match=rf"{plugin}/requirements.txt: urllib3==2.7.0 contradicts urllib3==2.8.0 "
                                         "of the scheduler's own dependencies"):
        with_plugin_requirements(LOCK, [plugin])


@pytest.mark.parametrize(("line", "number"), [("humanize>=4", 2), ("humanize", 2), ("-e git+https://x/y", 2),
                                              ("humanize==4.9.0 --hash=sha256:ab", 2)])
def test_an_unpinned_requirement_is_refused_by_file_and_line(plugin: Path, line: str, number: int) -> None:
    from labkit.lab_plugins import PluginFolderError, requirements

    (plugin / "requirements.txt").write_text(f"rich==13.7.1\n{line}\n")
    with pytest.raises(PluginFolderError, match=rf"{plugin}/requirements.txt:{number}: .* is not pinned"):
        requirements(plugin)


def test_the_context_holds_each_plugin_folder_under_its_name(tmp_path: Path, plugin: Path) -> None:
    from labkit.image import context_tag, prepare_context

    (plugin / "tests").mkdir()
    (plugin / "tests" / "test_it.py").write_text("def test(): pass\n")
    context = prepare_context(tmp_path / "context", LOCK, [plugin])
    shipped = sorted(p.relative_to(context / "plugins").as_posix() for p in (context / "plugins").rglob("*")
                     if p.is_file())
    assert shipped == ["gpu_aware/__init__.py", "gpu_aware/requirements.txt", "gpu_aware/tests/test_it.py"]
    # the tag computed from the context is the one computed from the folders themselves
    assert context_tag(context, BASE, "linux/amd64") == content_tag(
        BASE, "linux/amd64", LOCK, containerfile=CONTAINERFILE, plugins=[plugin])
    empty = prepare_context(tmp_path / "empty", LOCK)
    assert (empty / "plugins").is_dir() and not list((empty / "plugins").iterdir())
    assert "COPY plugins/ /opt/kubelab/plugins/" in CONTAINERFILE.read_text()


def test_the_tag_command_names_the_image_of_the_labs_plugin_folders(tmp_path: Path, plugin: Path, capsys) -> None:
    """`python -m labkit.image tag --lab FILE`: the reference deploy-scheduler would deploy for that lab."""
    from labkit.image import image_ref, main

    data = _lab_data()
    data["scheduler"]["plugins"] = [str(plugin)]
    data["placement"] = {}
    lab_file = tmp_path / "lab.yaml"
    lab_file.write_text(yaml.safe_dump(data))
    assert main(["tag", "--lab", str(lab_file)]) == 0
    assert capsys.readouterr().out.strip() == image_ref(plugins=[plugin]) != image_ref()
    (plugin / "requirements.txt").write_text("humanize>=4\n")
    assert main(["tag", "--lab", str(lab_file)]) == 1
    assert f"{plugin}/requirements.txt:1: 'humanize>=4' is not pinned" in capsys.readouterr().err
