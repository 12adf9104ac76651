"""The scheduler's manifests: its config and every object deploy-scheduler applies, rendered from the lab
definition (templates/scheduler/), and written out for review (`--render-only DIR`).

In extender mode (`scheduler.mode: extender`) the ServiceAccount is the same, and the RBAC, ConfigMap and
Deployment come from templates/scheduler/extender/: a second kube-scheduler and our extender in one pod,
the kube-scheduler's KubeSchedulerConfiguration (checked by ``kube_scheduler_config``) beside ours."""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from labdef.lab import KUBE_SCHEDULER_SECURE_PORT, Lab
from labdef.render import render
from labkit import lab_plugins
from labkit.scheduler_deploy.kube_scheduler_config import check_kube_scheduler_config
from labkit.scheduler_deploy.plugin_access import Rule, plugin_rules
from scheduler.framework import Registry
from scheduler.plugins import KUBE_SCHEDULER_DOES

TEMPLATE_DIR = "scheduler"
# The order objects are applied in: what others refer to first.
MANIFESTS = ("serviceaccount.yaml", "rbac.yaml", "configmap.yaml", "deployment.yaml")
# Extender mode: the same files, from these templates (relative to TEMPLATE_DIR).
EXTENDER_TEMPLATES = {"serviceaccount.yaml": "serviceaccount.yaml.j2", "rbac.yaml": "extender/rbac.yaml.j2",
                      "configmap.yaml": "extender/configmap.yaml.j2",
                      "deployment.yaml": "extender/deployment.yaml.j2"}
# What --render-only also writes in extender mode, for a kube-scheduler and extender of the user's own.
KUBE_SCHEDULER_CONFIG_FILE = "kube-scheduler-config.yaml"
EXTENDER_CONFIG_FILE = "extender-config.yaml"
KUBE_SCHEDULER_IMAGE = "registry.k8s.io/kube-scheduler"
KUBE_SCHEDULER_CPU_REQUEST = "100m"  # what kubeadm requests for the cluster's own kube-scheduler
# klog verbosity for the lab's log_level: 2 is kubeadm's default for its kube-scheduler, 4 logs each decision.
KUBE_SCHEDULER_VERBOSITY = {"debug": 4, "info": 2, "warning": 0, "error": 0}
CHECKSUM_ANNOTATION = "kubelab.io/config-checksum"
RUN_AS_USER = 65532  # the numeric non-root user of scheduler/Containerfile


@dataclass(frozen=True)
class Manifest:
    filename: str
    text: str

    @property
    def objects(self) -> list[dict[str, Any]]:
        return [doc for doc in yaml.safe_load_all(self.text) if doc]


def common_labels(lab: Lab) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "kubelab-scheduler",
        "app.kubernetes.io/instance": lab.scheduler.name,
        "app.kubernetes.io/component": "scheduler",
        "app.kubernetes.io/managed-by": "kubelab",
    }


def selector_labels(lab: Lab) -> dict[str, str]:
    """The Deployment's selector: immutable once created, so only the labels that never change."""
    labels = common_labels(lab)
    return {key: labels[key] for key in ("app.kubernetes.io/name", "app.kubernetes.io/instance")}


def scheduler_profile(lab: Lab) -> dict[str, Any]:
    """The profile our scheduler runs: the lab's scheduler.profile under scheduler.name. In extender mode the
    extender's: the plugins the profile enables with kube-scheduler's defaults disabled (kube-scheduler runs
    those itself: scoring them twice would weigh them double)."""
    fragment = lab.scheduler.profile.fragment()
    if lab.scheduler.mode == "extender":
        plugins = copy.deepcopy(fragment.get("plugins") or {})
        multi_point = plugins.setdefault("multiPoint", {})
        multi_point["disabled"] = [{"name": "*"}, *(multi_point.get("disabled") or [])]
        fragment = {**fragment, "plugins": plugins}
    return {"schedulerName": lab.scheduler.name, **fragment}


def render_config(lab: Lab) -> str:
    """Our scheduler's configuration (in extender mode the extender's)."""
    s = lab.scheduler
    return render(f"{TEMPLATE_DIR}/config.yaml.j2", name=s.name, namespace=s.namespace,
                  leader_elect=s.leader_elect, port=s.port, profile=scheduler_profile(lab))


def render_kube_scheduler_config(lab: Lab) -> str:
    """Extender mode: the second kube-scheduler's KubeSchedulerConfiguration, checked against
    kube-scheduler's v1 fields (a failure here is a template bug, not a user's)."""
    s = lab.scheduler
    text = render(f"{TEMPLATE_DIR}/kube-scheduler-config.yaml.j2", name=s.name, namespace=s.namespace,
                  leader_elect=s.leader_elect, extender=s.extender)
    check_kube_scheduler_config(yaml.safe_load(text))
    return text


def kube_scheduler_image(lab: Lab) -> str:
    """The official image at the cluster's own version: the one kubeadm pulled onto the control plane."""
    return f"{KUBE_SCHEDULER_IMAGE}:v{lab.kubernetes.version}"


def extender_probes(port: int) -> dict[str, list[str]]:
    """Probe commands run inside the extender's container: its listener is on the pod's loopback only.
    urlopen raises (exit 1) on a refused connection and on any status from 400 up (503: not synced)."""
    script = "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=3)"
    return {path.strip("/"): ["python", "-c", script, f"http://127.0.0.1:{port}{path}"]
            for path in ("/healthz", "/readyz")}


def config_checksum(config_text: str) -> str:
    return hashlib.sha256(config_text.encode()).hexdigest()


def plugin_access(lab: Lab, plugins: Registry | None = None) -> list[Rule]:
    """The RBAC rules the profile's plugins declare, from ``plugins`` (default: the lab's, loaded here). An
    extender runs none of the plugins kube-scheduler runs itself (``KUBE_SCHEDULER_DOES``): their access is
    kube-scheduler's."""
    leave_out = KUBE_SCHEDULER_DOES if lab.scheduler.mode == "extender" else frozenset()
    return plugin_rules(lab_plugins.validate_profile(lab, plugins if plugins is not None else lab_plugins.registry(lab)),
                        leave_out)


def render_manifests(lab: Lab, image: str, plugins: Registry | None = None,
                     access: list[Rule] | None = None) -> list[Manifest]:
    """Every object deploy-scheduler applies, as text, in apply order; the RBAC grants ``access`` (default:
    what the profile's plugins declare they watch and write, with ``plugins`` or the lab's loaded)."""
    s = lab.scheduler
    config_text = render_config(lab)
    values = {
        "name": s.name,
        "namespace": s.namespace,
        "labels": common_labels(lab),
        "selector": selector_labels(lab),
        "config_text": config_text.rstrip("\n"),
        "config_checksum": config_checksum(config_text),
        "image": image,
        "replicas": s.replicas,
        # Without leader election two pods would both schedule: never run old and new side by side.
        "strategy": "RollingUpdate" if s.leader_elect else "Recreate",
        "log_level": s.log_level,
        "port": s.port,
        "cpu_request": s.cpu_request,
        "memory_request": s.memory_request,
        "memory_limit": s.memory_limit,
        "run_as_user": RUN_AS_USER,
        "plugin_args": lab_plugins.scheduler_args(lab),
        # kubernetes.feature_gates: the lab's scheduler (and in extender mode its kube-scheduler) takes them too.
        "feature_gates": lab.kubernetes.feature_gates_flag,
        "plugin_rules": access if access is not None else plugin_access(lab, plugins),
    }
    if s.mode == "extender":
        return _extender_manifests(lab, values)
    return [Manifest(name, render(f"{TEMPLATE_DIR}/{name}.j2", **values)) for name in MANIFESTS]


def _extender_manifests(lab: Lab, values: dict[str, Any]) -> list[Manifest]:
    s = lab.scheduler
    kube_scheduler_config = render_kube_scheduler_config(lab)
    values = {
        **values,
        "kube_scheduler_config_text": kube_scheduler_config.rstrip("\n"),
        # Either configuration changing restarts the pod.
        "config_checksum": config_checksum(render_config(lab) + kube_scheduler_config),
        "kube_scheduler_image": kube_scheduler_image(lab),
        "kube_scheduler_port": KUBE_SCHEDULER_SECURE_PORT,
        "kube_scheduler_cpu_request": KUBE_SCHEDULER_CPU_REQUEST,
        "kube_scheduler_verbosity": KUBE_SCHEDULER_VERBOSITY[s.log_level],
        "extender_port": s.extender.port,
        "extender_probes": extender_probes(s.extender.port),
    }
    return [Manifest(name, render(f"{TEMPLATE_DIR}/{EXTENDER_TEMPLATES[name]}", **values)) for name in MANIFESTS]


def write_manifests(manifests: list[Manifest], directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, manifest in enumerate(manifests, start=1):
        path = directory / f"{index:02d}-{manifest.filename}"
        path.write_text(manifest.text)
        paths.append(path)
    return paths


def write_extender_mode_configs(lab: Lab, directory: Path) -> tuple[Path, Path]:
    """Extender mode: kube-scheduler's configuration and the extender's, each in a file of its own, for a
    kube-scheduler and `python -m scheduler extender` the user runs."""
    directory.mkdir(parents=True, exist_ok=True)
    kube_scheduler, extender = directory / KUBE_SCHEDULER_CONFIG_FILE, directory / EXTENDER_CONFIG_FILE
    kube_scheduler.write_text(render_kube_scheduler_config(lab))
    extender.write_text(render_config(lab))
    return kube_scheduler, extender
