"""The scheduler's container image: content tag, build context, build, and a single-platform archive.

No registry is involved. The image is built with whichever of docker, podman or buildah works on the host
(or, when none does, inside the control-plane VM: see deploys/scheduler_image.py) and saved as a
docker-archive tarball, the format `ctr -n k8s.io images import` reads without guessing names and which
holds exactly one platform (a multi-platform or attested save fails there with "content digest not found").

The tag is derived from everything that goes into the image: the Containerfile, the base image and its
Python version, the platform, the pinned runtime dependencies (the plugin folders' pinned requirements
included), the scheduler's sources and the lab's plugin folders (/opt/kubelab/plugins/<folder name> in the
image). Changing any of them gives a new tag, so a re-deploy rolls the pod; changing nothing gives the same
tag, so nothing moves.

    python -m labkit.image tag [--lab FILE]    # print the image reference the lab would deploy
    python -m labkit.image build [--out DIR]   # build it (with the lab's plugin folders) and print the archive
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from deploys.image_archive import ArchiveError, read_manifest_entry
from labdef.errors import UserError
from labdef.lab import load_lab
from labkit import lab_plugins

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SCHEDULER_DIR = PROJECT_ROOT / "scheduler"
CONTAINERFILE = SCHEDULER_DIR / "Containerfile"
PYPROJECT = PROJECT_ROOT / "pyproject.toml"
DEFAULT_IMAGE = "localhost/kubelab-scheduler"
DEFAULT_PLATFORM = "linux/amd64"

# pip platform tags per image architecture; Debian bookworm's glibc (2.36) runs all of these.
WHEEL_PLATFORMS = {
    "amd64": ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64"),
    "arm64": ("manylinux2014_aarch64", "manylinux_2_17_aarch64", "manylinux_2_28_aarch64"),
}


class ImageError(UserError):
    """The image cannot be built or read; the message names the file or tool and the fix."""


@dataclass(frozen=True)
class BaseImage:
    """The image the scheduler's image starts from, and the Python minor version it runs."""

    ref: str
    python_version: str


@dataclass(frozen=True)
class BuiltImage:
    ref: str             # repository:tag, as the Deployment names it
    archive: Path        # docker-archive tarball for `ctr -n k8s.io images import`
    image_id: str        # sha256:<config digest>, what `crictl images` shows as IMAGE ID
    builder: str         # docker, podman or buildah; "vm" (on the control plane); "cached" (not built)
    seconds: float       # wall time of the build itself


# ---------------------------------------------------------------------------------------------------
# What goes into the image
# ---------------------------------------------------------------------------------------------------

def containerfile_args(path: Path = CONTAINERFILE) -> dict[str, str]:
    """The `ARG NAME=default` lines of the Containerfile: the pinned base lives there, nowhere else."""
    args = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^ARG\s+([A-Z_]+)=(\S+)\s*$", line)
        if match:
            args[match.group(1)] = match.group(2)
    return args


def default_base(path: Path = CONTAINERFILE) -> BaseImage:
    args = containerfile_args(path)
    try:
        return BaseImage(args["BASE_IMAGE"], args["PYTHON_VERSION"])
    except KeyError as missing:
        raise ImageError(f"{path}: needs an `ARG {missing.args[0]}=...` line with a default") from None


def scheduler_sources(root: Path = SCHEDULER_DIR) -> list[Path]:
    """The package's Python files, sorted: what gets copied into the image."""
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _imported_top_modules(files: Iterable[Path]) -> set[str]:
    names: set[str] = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"__future__", "scheduler"}


def _project_pins(pyproject: Path = PYPROJECT) -> dict[str, str]:
    """canonical name -> 'name==version' for every exact pin in [project.dependencies]."""
    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    pins = {}
    for text in deps:
        req = Requirement(text)
        specs = list(req.specifier)
        if len(specs) == 1 and specs[0].operator == "==":
            pins[canonicalize_name(req.name)] = f"{req.name}=={specs[0].version}"
    return pins


def runtime_requirements(files: Sequence[Path] | None = None, pyproject: Path = PYPROJECT) -> list[str]:
    """The distributions the scheduler imports, with their pyproject.toml pins where it has one.

    Deriving them (rather than keeping a second list) means a new import cannot be forgotten in the image.
    """
    files = scheduler_sources() if files is None else files
    by_module = importlib.metadata.packages_distributions()
    pins = _project_pins(pyproject)
    wanted: set[str] = set()
    for module in sorted(_imported_top_modules(files)):
        dists = by_module.get(module)
        if not dists:
            raise ImageError(f"scheduler/ imports {module!r}, which no installed distribution provides; "
                             f"add it to [project.dependencies] in {pyproject} and reinstall")
        for dist in dists:
            wanted.add(canonicalize_name(dist))
    # A module imported directly but installed only as a dependency of a pinned one (urllib3 through
    # kubernetes) is locked to the installed version by lock_requirements.
    return sorted(pins.get(name, name) for name in wanted)


def lock_requirements(requirements: Sequence[str], python_version: str) -> list[str]:
    """Every distribution the image needs, pinned to the versions installed in this environment.

    The transitive dependencies (urllib3, certifi, ...) are not pinned in pyproject.toml; pinning them to
    what the project's own environment runs makes the image reproducible and its tag meaningful.
    """
    env = default_environment()
    env.update(python_version=python_version, python_full_version=f"{python_version}.0",
               sys_platform="linux", platform_system="Linux", extra="")
    locked: dict[str, str] = {}
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in locked or (req.marker and not req.marker.evaluate(env)):
            continue
        try:
            dist = importlib.metadata.distribution(req.name)
        except importlib.metadata.PackageNotFoundError:
            raise ImageError(f"{req.name} (needed by the scheduler image) is not installed here; "
                             "run `pip install -e .[dev]` in the project's virtualenv") from None
        locked[name] = f"{name}=={dist.version}"
        todo.extend(Requirement(r) for r in dist.requires or [])
    return sorted(locked.values())


def plugin_files(root: Path) -> list[Path]:
    """A plugin folder's files as they go into the image, sorted: no caches, no hidden files."""
    return sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and not any(part.startswith(".") for part in p.relative_to(root).parts) and p.suffix != ".pyc")


def with_plugin_requirements(lock: Sequence[str], plugins: Sequence[Path]) -> list[str]:
    """The lock plus each plugin folder's pinned requirements; a pin that contradicts another is refused."""
    pinned = {canonicalize_name(Requirement(line).name): (line, "the scheduler's own dependencies") for line in lock}
    for folder in plugins:
        for line in lab_plugins.requirements(folder):
            name = canonicalize_name(Requirement(line).name)
            if name in pinned and pinned[name][0] != line:
                raise ImageError(f"{folder / lab_plugins.REQUIREMENTS_FILE}: {line} contradicts {pinned[name][0]} "
                                 f"of {pinned[name][1]}; pin the same version")
            pinned.setdefault(name, (line, str(folder / lab_plugins.REQUIREMENTS_FILE)))
    return sorted(line for line, _ in pinned.values())


def content_tag(base: BaseImage, platform: str = DEFAULT_PLATFORM, lock: Sequence[str] | None = None,
                containerfile: Path = CONTAINERFILE, sources: Sequence[Path] | None = None,
                source_root: Path = SCHEDULER_DIR, plugins: Sequence[Path] = ()) -> str:
    """`<scheduler version>-<12 hex>`: a digest of everything the image is made of (``plugins``: the plugin
    folders, each shipped under its folder name)."""
    if lock is None:
        lock = with_plugin_requirements(lock_requirements(runtime_requirements(), base.python_version), plugins)
    sources = scheduler_sources(source_root) if sources is None else sources
    digest = hashlib.sha256()

    def part(label: str, data: bytes) -> None:
        digest.update(f"{label}\0{len(data)}\0".encode())
        digest.update(data)

    part("containerfile", containerfile.read_bytes())
    part("base", f"{base.ref} python{base.python_version} {platform}".encode())
    part("lock", "\n".join(lock).encode())
    for path in sources:
        part(f"src:{path.relative_to(source_root).as_posix()}", path.read_bytes())
    for folder in plugins:
        for path in plugin_files(folder):
            part(f"plugin:{folder.name}/{path.relative_to(folder).as_posix()}", path.read_bytes())
    return f"{scheduler_version(source_root)}-{digest.hexdigest()[:12]}"


def scheduler_version(source_root: Path = SCHEDULER_DIR) -> str:
    match = re.search(r'^__version__\s*=\s*"([^"]+)"', (source_root / "__init__.py").read_text(),
                      re.MULTILINE)
    if not match:
        raise ImageError(f"{source_root / '__init__.py'}: no `__version__ = \"x.y.z\"` line")
    return match.group(1)


def image_ref(repository: str = DEFAULT_IMAGE, base: BaseImage | None = None,
              platform: str = DEFAULT_PLATFORM, plugins: Sequence[Path] = ()) -> str:
    return f"{repository}:{content_tag(base or default_base(), platform, plugins=plugins)}"


# ---------------------------------------------------------------------------------------------------
# Build context
# ---------------------------------------------------------------------------------------------------

def download_wheels(dest: Path, python_version: str, platform: str,
                    run: Callable[..., subprocess.CompletedProcess] = subprocess.run) -> None:
    """Fetch the image's wheels on the host (through its pip configuration), for the image's Python."""
    arch = platform.split("/")[1]
    if arch not in WHEEL_PLATFORMS:
        raise ImageError(f"platform {platform!r} is not supported; use one of "
                         f"{', '.join('linux/' + a for a in WHEEL_PLATFORMS)}")
    dest.mkdir(parents=True, exist_ok=True)
    requirements = dest.parent / "requirements.lock"
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
           "--only-binary=:all:", "--implementation", "cp", "--python-version", python_version,
           "--requirement", str(requirements), "--dest", str(dest)]
    for tag in WHEEL_PLATFORMS[arch]:
        cmd += ["--platform", tag]
    result = run(cmd, check=False, capture_output=True, text=True)
    if result.returncode != 0:
        raise ImageError(f"downloading the scheduler's wheels for Python {python_version} ({platform}) "
                         f"failed; check pip can reach its index:\n{result.stderr.strip()}")


def provide_wheels(context: Path, python_version: str, platform: str,
                   run: Callable[..., subprocess.CompletedProcess] = subprocess.run) -> None:
    """The context's wheels/, downloaded once per exact requirements.lock, Python and platform.

    Every version in the lock is pinned, so the same lock means the same wheels: they are kept beside the
    context (`wheels-<digest>/`) and linked into it, and a change to the scheduler's sources alone (the
    inner loop) downloads nothing.
    """
    key = hashlib.sha256((context / "requirements.lock").read_bytes()
                         + f"\0{python_version}\0{platform}".encode()).hexdigest()[:16]
    cache = context.parent / f"wheels-{key}"
    target = context / "wheels"
    if cache.is_dir():
        shutil.copytree(cache, target, copy_function=os.link, dirs_exist_ok=True)
        return
    download_wheels(target, python_version, platform, run)
    partial = cache.with_name(cache.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(target, partial, copy_function=os.link)
    partial.rename(cache)  # whole or not at all: an interrupted download is not taken for a finished one


def prepare_context(dest: Path, lock: Sequence[str], plugins: Sequence[Path] = ()) -> Path:
    """Lay out the build context: Containerfile, requirements.lock, scheduler/*.py and plugins/<folder name>/
    for each plugin folder (wheels come later).

    The tag is computed from this copy, so it describes exactly what is built even if the working tree
    changes meanwhile.
    """
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    shutil.copy2(CONTAINERFILE, dest / "Containerfile")
    (dest / "requirements.lock").write_text("\n".join(lock) + "\n")
    for path in scheduler_sources():
        target = dest / "scheduler" / path.relative_to(SCHEDULER_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    (dest / "plugins").mkdir()  # COPY needs it, even empty
    for folder in plugins:
        for path in plugin_files(folder):
            target = dest / "plugins" / folder.name / path.relative_to(folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    return dest


def context_tag(context: Path, base: BaseImage, platform: str) -> str:
    lock = (context / "requirements.lock").read_text().splitlines()
    sources = context / "scheduler"
    plugins = sorted(p for p in (context / "plugins").iterdir() if p.is_dir())
    return content_tag(base, platform, lock, containerfile=context / "Containerfile",
                       sources=scheduler_sources(sources), source_root=sources, plugins=plugins)


# ---------------------------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------------------------

@dataclass
class Builder:
    """One host build tool: how to check it works, build, and save a single-platform docker-archive."""

    name: str
    global_args: tuple[str, ...] = ()   # e.g. buildah's --root/--runroot/--storage-driver for tests

    def usable(self) -> bool:
        exe = shutil.which(self.name)
        if not exe:
            return False
        # A docker client without a daemon is common (CI images, remote contexts): ask the daemon.
        probe = {"docker": ["info", "--format", "{{.ServerVersion}}"], "podman": ["info"],
                 "buildah": ["info"]}[self.name]
        return subprocess.run([exe, *self.global_args, *probe], check=False, capture_output=True).returncode == 0

    def _supports(self, command: str, flag: str) -> bool:
        help_text = subprocess.run([self.name, command, "--help"], check=False, capture_output=True, text=True)
        return flag in help_text.stdout

    def _run(self, *args: str, log: Callable[[str], None]) -> None:
        cmd = [self.name, *self.global_args, *args]
        log("$ " + " ".join(cmd))
        env = {**os.environ, "BUILDX_NO_DEFAULT_ATTESTATIONS": "1"}
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        tail: list[str] = []
        assert proc.stdout is not None
        for line in proc.stdout:
            tail = (tail + [line.rstrip()])[-40:]
            log("  " + line.rstrip())
        if proc.wait() != 0:
            raise ImageError(f"{self.name} failed (exit {proc.returncode}) running {' '.join(cmd)}:\n"
                             + "\n".join(tail))

    def build(self, context: Path, ref: str, base: BaseImage, platform: str, archive: Path,
              log: Callable[[str], None], pull: bool = True) -> None:
        build_args = ["--build-arg", f"BASE_IMAGE={base.ref}",
                      "--build-arg", f"PYTHON_VERSION={base.python_version}"]
        common = ["-f", str(context / "Containerfile"), "-t", ref, "--platform", platform, *build_args]
        if self.name == "docker":
            # No provenance/SBOM attestations (BUILDX_NO_DEFAULT_ATTESTATIONS in _run): they make the save
            # multi-manifest, which ctr rejects; the legacy builder would refuse a --provenance flag.
            self._run("build", *common, "--network=none", *([] if pull else ["--pull=false"]), str(context),
                      log=log)
            # Docker with the containerd image store saves every platform it knows unless told one.
            single = ["--platform", platform] if self._supports("save", "--platform") else []
            self._run("save", *single, "-o", str(archive), ref, log=log)
        elif self.name == "podman":
            self._run("build", *common, "--network=none", f"--pull={'missing' if pull else 'never'}",
                      str(context), log=log)
            self._run("save", "--format", "docker-archive", "-o", str(archive), ref, log=log)
        else:
            self._run("bud", *common, "--network=none", "--layers",
                      f"--pull={'true' if pull else 'never'}", str(context), log=log)
            self._run("push", "--quiet", ref, f"docker-archive:{archive}:{ref}", log=log)


BUILDER_ORDER = ("docker", "podman", "buildah")


def find_builder(order: Sequence[str] = BUILDER_ORDER) -> Builder | None:
    """The first build tool that is installed and answers; None means: build in the control-plane VM."""
    for name in order:
        builder = Builder(name)
        if builder.usable():
            return builder
    return None


# ---------------------------------------------------------------------------------------------------
# Archives
# ---------------------------------------------------------------------------------------------------

def _archive_entry(archive: Path) -> dict:
    """The one image entry of a docker-archive's manifest.json (Config, RepoTags, Layers)."""
    try:
        return read_manifest_entry(archive)
    except ArchiveError as err:
        raise ImageError(str(err)) from None


def archive_image_id(archive: Path) -> str:
    """The image's config digest (`sha256:...`) from a docker-archive, as `crictl images` reports it."""
    config = _archive_entry(archive)["Config"]  # "<hex>.json" (docker, buildah) or "blobs/sha256/<hex>" (docker 25+)
    hexdigest = Path(config).name.removesuffix(".json")
    if not re.fullmatch(r"[0-9a-f]{64}", hexdigest):
        raise ImageError(f"{archive}: unexpected config entry {config!r} in manifest.json")
    return f"sha256:{hexdigest}"


def archive_repo_tags(archive: Path) -> list[str]:
    return list(_archive_entry(archive).get("RepoTags") or [])


@dataclass(frozen=True)
class BuildPlan:
    context: Path        # the build context (wheels not yet downloaded)
    ref: str
    archive: Path        # where the docker-archive goes
    base: BaseImage
    platform: str

    @property
    def done(self) -> bool:
        """An archive for this exact content is already there."""
        try:
            return self.archive.exists() and self.ref in archive_repo_tags(self.archive)
        except ImageError:
            return False  # unreadable or truncated: build again

    def result(self, builder: str, seconds: float) -> BuiltImage:
        return BuiltImage(self.ref, self.archive, archive_image_id(self.archive), builder, seconds)


def plan_build(out_dir: Path, repository: str = DEFAULT_IMAGE, base: BaseImage | None = None,
               platform: str = DEFAULT_PLATFORM, plugins: Sequence[Path] = ()) -> BuildPlan:
    """The context laid out and the tag computed from it; ``plugins``: the lab's plugin folders."""
    base = base or default_base()
    lock = with_plugin_requirements(lock_requirements(runtime_requirements(), base.python_version), plugins)
    context = prepare_context(out_dir / "context", lock, plugins)
    tag = context_tag(context, base, platform)
    return BuildPlan(context, f"{repository}:{tag}", out_dir / f"scheduler-{tag}.tar", base, platform)


def build_image(out_dir: Path, repository: str = DEFAULT_IMAGE, base: BaseImage | None = None,
                platform: str = DEFAULT_PLATFORM, builder: Builder | None = None,
                log: Callable[[str], None] = print, plugins: Sequence[Path] = ()) -> BuiltImage:
    """Build the scheduler image on this host and save it as `<out_dir>/scheduler-<tag>.tar`.

    An existing archive for the same content tag is reused: the tag already says nothing changed.
    """
    plan = plan_build(out_dir, repository, base, platform, plugins)
    if plan.done:
        log(f"image {plan.ref} already built: {plan.archive}")
        return plan.result("cached", 0.0)
    builder = builder or find_builder()
    if builder is None:
        raise ImageError("none of docker, podman or buildah works on this host; build in the control-plane "
                         "VM instead (deploy-scheduler does this by itself) or install one of them")
    return build_planned(plan, builder, log)


def build_planned(plan: BuildPlan, builder: Builder, log: Callable[[str], None] = print) -> BuiltImage:
    """Build what plan_build laid out with a host tool (the archive is written whole or not at all)."""
    provide_wheels(plan.context, plan.base.python_version, plan.platform)
    partial = plan.archive.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    started = time.monotonic()
    builder.build(plan.context, plan.ref, plan.base, plan.platform, partial, log,
                  pull=not plan.base.ref.startswith("localhost/"))
    seconds = time.monotonic() - started
    partial.rename(plan.archive)
    return plan.result(builder.name, seconds)


def context_tarball(plan: BuildPlan) -> Path:
    """The context with its wheels as one tarball, for a build elsewhere (the control-plane VM)."""
    provide_wheels(plan.context, plan.base.python_version, plan.platform)
    tarball = plan.context.with_name("context.tar")
    with tarfile.open(tarball, "w") as tar:
        for path in sorted(plan.context.rglob("*")):
            tar.add(path, arcname=path.relative_to(plan.context).as_posix(), recursive=False)
    return tarball


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labkit.image", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["tag", "build"])
    parser.add_argument("--repository", default=DEFAULT_IMAGE)
    parser.add_argument("--base", help="base image reference (default: the Containerfile's pinned one)")
    parser.add_argument("--python-version", help="Python minor version of --base, e.g. 3.11")
    parser.add_argument("--platform", default=DEFAULT_PLATFORM)
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / ".lab" / "images")
    parser.add_argument("--lab", type=Path, default=None, help="lab definition whose plugin folders go in "
                                                                "(default: lab.yaml)")
    args = parser.parse_args(argv)
    base = default_base()
    if args.base:
        if not args.python_version:
            parser.error("--base needs --python-version (wheels are downloaded for it)")
        base = BaseImage(args.base, args.python_version)
    try:
        plugins = lab_plugins.folders(load_lab(args.lab))
        if args.command == "tag":
            print(image_ref(args.repository, base, args.platform, plugins))
        else:
            built = build_image(args.out, args.repository, base, args.platform, plugins=plugins)
            print(f"{built.ref}\t{built.archive}\t{built.image_id}\tbuilt with {built.builder} "
                  f"in {built.seconds:.1f}s")
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
