"""A plugin folder's own manifests: YAML files under `crds/` and `manifests/` beside its __init__.py (the
CustomResourceDefinitions of the kinds its plugins watch, and objects they need, such as a ConfigMap or a
default custom object). deploy-scheduler reads and checks every file of every folder in scheduler.plugins
before anything is built or applied, then applies them before the scheduler: CRDs first, waiting until the
API server has established each, then the other objects (--render-only writes them, in that order). A namespaced object without a namespace goes to
the scheduler's (scheduler.namespace).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from labdef.errors import UserError
from labdef.lab import Lab
from labkit import lab_plugins
from labkit.console import Echo
from labkit.kube import Kube
from labkit.scheduler_deploy import DeployError
from labkit.scheduler_deploy.apply import RESOURCES, apply_objects, describe

MANIFEST_DIRS = ("crds", "manifests")  # applied in this order within a folder; CRDs of all folders first
CRD_API_VERSION = "apiextensions.k8s.io/v1"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
ESTABLISH_SECONDS = 60.0
RENDERED_FILE = "00-plugin-manifests.yaml"  # --render-only: before 01-serviceaccount.yaml and the rest
Obj = dict[str, Any]


class PluginManifestError(UserError):
    """A plugin folder's manifest cannot be applied; the message names the file, the document and the fix."""


@dataclass(frozen=True)
class PluginObject:
    source: str  # "<file>" or "<file> (document N)"
    obj: Obj
    path: str  # its API path


@dataclass
class PluginManifests:
    crds: list[PluginObject] = field(default_factory=list)
    objects: list[PluginObject] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.crds or self.objects)


def manifest_files(folder: Path) -> Iterator[Path]:
    for sub in MANIFEST_DIRS:
        directory = folder / sub
        if directory.is_dir():
            yield from sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())


def _documents(path: Path) -> Iterator[tuple[str, Any]]:
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    except yaml.YAMLError as err:
        raise PluginManifestError(f"{path}: not valid YAML: {err}; fix the file (or move it out of "
                                  f"{path.parent.name}/)") from None
    except OSError as err:
        raise PluginManifestError(f"{path}: cannot read it: {err.strerror}") from None
    for number, doc in enumerate(docs, 1):
        yield (f"{path} (document {number})" if len(docs) > 1 else str(path)), doc


def _crd_problems(crd: Obj) -> list[str]:
    """What kube-apiserver would refuse in an apiextensions.k8s.io/v1 CRD, as far as applying it needs."""
    spec = crd.get("spec") if isinstance(crd.get("spec"), dict) else {}
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    problems = [f"{name}: required" for name, value in (("spec.group", spec.get("group")),
                                                          ("spec.names.plural", names.get("plural")),
                                                          ("spec.names.kind", names.get("kind"))) if not value]
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        problems.append(f"spec.scope: {spec.get('scope')!r}; write Namespaced or Cluster")
    versions = spec.get("versions") if isinstance(spec.get("versions"), list) else []
    if sum(1 for v in versions if isinstance(v, dict) and v.get("storage")) != 1:
        problems.append("spec.versions: mark exactly one version storage: true")
    for i, version in enumerate(versions):
        if not isinstance(version, dict) or not (version.get("schema") or {}).get("openAPIV3Schema"):
            problems.append(f"spec.versions[{i}].schema.openAPIV3Schema: required in apiextensions.k8s.io/v1")
    name = (crd.get("metadata") or {}).get("name")
    if spec.get("group") and names.get("plural") and name != f"{names['plural']}.{spec['group']}":
        problems.append(f"metadata.name: {name!r}; it must be <spec.names.plural>.<spec.group>: "
                        f"{names['plural']}.{spec['group']}")
    return problems


def _kind_paths(crds: list[PluginObject]) -> dict[tuple[str, str], tuple[str, str, bool]]:
    """(apiVersion, kind) -> (API prefix, plural, namespaced) for every served version of the CRDs."""
    out = {}
    for crd in crds:
        spec = crd.obj["spec"]
        for version in spec["versions"]:
            if version.get("served"):
                out[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = (
                    f"/apis/{spec['group']}/{version['name']}", spec["names"]["plural"], spec["scope"] == "Namespaced")
    return out


def _builtin_paths() -> dict[tuple[str, str], tuple[str, str, bool]]:
    return {(prefix.removeprefix("/apis/").removeprefix("/api/"), kind): (prefix, plural, namespaced)
            for kind, (prefix, plural, namespaced) in RESOURCES.items()}


def load(lab: Lab) -> PluginManifests:
    """Every manifest of the lab's plugin folders, checked; PluginManifestError naming the file otherwise."""
    crds: list[PluginObject] = []
    others: list[tuple[str, Obj]] = []
    for folder in lab_plugins.folders(lab):
        for path in manifest_files(folder):
            for source, doc in _documents(path):
                if not isinstance(doc, dict):
                    raise PluginManifestError(f"{source}: not a Kubernetes object (a mapping with apiVersion, "
                                              "kind and metadata.name)")
                missing = [f for f, v in (("apiVersion", doc.get("apiVersion")), ("kind", doc.get("kind")),
                                          ("metadata.name", (doc.get("metadata") or {}).get("name"))) if not v]
                if missing:
                    raise PluginManifestError(f"{source}: {', '.join(missing)} missing; every object needs "
                                              "apiVersion, kind and metadata.name")
                if doc["kind"] == "CustomResourceDefinition":
                    if doc["apiVersion"] != CRD_API_VERSION:
                        raise PluginManifestError(f"{source}: apiVersion {doc['apiVersion']}: write {CRD_API_VERSION} "
                                                  "(apiextensions.k8s.io/v1beta1 was removed in Kubernetes 1.22)")
                    problems = _crd_problems(doc)
                    if problems:
                        raise PluginManifestError(f"{source}: CustomResourceDefinition {doc['metadata']['name']}:\n"
                                                  + "\n".join(f"  - {p}" for p in problems))
                    crds.append(PluginObject(source, doc, f"{CRD_PATH}/{doc['metadata']['name']}"))
                else:
                    others.append((source, doc))
    kinds = {**_builtin_paths(), **_kind_paths(crds)}
    objects = []
    for source, doc in others:
        where = kinds.get((doc["apiVersion"], doc["kind"]))
        if where is None:
            known = ", ".join(f"{kind} ({api_version})" for api_version, kind in sorted(kinds, key=lambda k: k[1]))
            raise PluginManifestError(
                f"{source}: kind {doc['kind']} ({doc['apiVersion']}) is not one deploy-scheduler can apply: a custom "
                f"resource needs its CustomResourceDefinition in a plugin folder's crds/; known: {known}")
        prefix, plural, namespaced = where
        meta = dict(doc["metadata"])
        if namespaced:
            meta.setdefault("namespace", lab.scheduler.namespace)
        elif "namespace" in meta:
            raise PluginManifestError(f"{source}: {doc['kind']} is cluster-scoped: remove metadata.namespace")
        obj = {**doc, "metadata": meta}
        scope = f"/namespaces/{meta['namespace']}" if namespaced else ""
        objects.append(PluginObject(source, obj, f"{prefix}{scope}/{plural}/{meta['name']}"))
    _refuse_repeats([*crds, *objects])
    return PluginManifests(crds, objects)


def write(manifests: PluginManifests, directory: Path) -> Path:
    """--render-only: every object of the plugin folders, CRDs first, as one file named to sort before the
    scheduler's own (`kubectl apply -f DIR` applies it first; deploy-scheduler also waits for each CRD to be
    Established before the rest), each document under a comment naming its file."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / RENDERED_FILE
    path.write_text("---\n".join(f"# from {item.source}\n" + yaml.safe_dump(item.obj, sort_keys=False)
                                 for item in [*manifests.crds, *manifests.objects]))
    return path


def _refuse_repeats(objects: list[PluginObject]) -> None:
    seen: dict[str, str] = {}
    for item in objects:
        if item.path in seen:
            raise PluginManifestError(f"{item.source}: {describe(item.obj)} is also in {seen[item.path]}; keep one")
        seen[item.path] = item.source


def apply(kube: Kube, manifests: PluginManifests, echo: Echo = print, timeout: float = ESTABLISH_SECONDS,
          clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> dict[str, str]:
    """Server-side apply the CRDs, wait until each is Established, then apply the other objects."""
    outcome = apply_objects(kube, [(c.obj, c.path) for c in manifests.crds], echo)
    waiting = {c.obj["metadata"]["name"]: c.path for c in manifests.crds}
    deadline = clock() + timeout
    while waiting:
        for name, path in list(waiting.items()):
            conditions = ((kube.get_or_none(path) or {}).get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                del waiting[name]
        if not waiting:
            break
        if clock() >= deadline:
            raise DeployError(f"CustomResourceDefinition {', '.join(sorted(waiting))} not Established within "
                              f"{timeout:.0f} s; see `kubectl describe crd {min(waiting)}` (its NamesAccepted "
                              "condition names a conflict)")
        sleep(0.5)
    outcome.update(apply_objects(kube, [(o.obj, o.path) for o in manifests.objects], echo))
    return outcome
