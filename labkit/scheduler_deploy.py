"""`invoke deploy-scheduler`: build the scheduler image, side-load it, render and apply its manifests.

    python -m labkit.scheduler_deploy [--lab FILE] [--kubeconfig FILE] [--render-only DIR]

Steps, each safe to repeat:
1. image: the content tag (labkit.image) names the image; an archive already built for it is reused.
2. side-load: deploys/scheduler_image.py uploads the archive to every node and imports it into
   containerd's k8s.io namespace, skipping nodes that already hold that exact image.
3. render: templates/scheduler/*.yaml.j2 with values from the lab definition; the Deployment's pod
   template carries the rendered config's checksum, so a config change restarts the pod.
4. apply: server-side apply from the host with the lab's kubeconfig (field manager "kubelab"); an
   unchanged object keeps its resourceVersion, so a re-run with nothing changed changes nothing.
5. rollout: wait for the Deployment like `kubectl rollout status`; on failure print the pods' events
   and last log lines.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from labdef.errors import UserError
from labdef.lab import Lab, LabError, load_lab
from labdef.render import render
from labkit.image import BuildPlan, BuiltImage

if TYPE_CHECKING:  # the Kubernetes client takes half a second to import: only the apply steps need it
    from labkit.kube import Kube

TEMPLATE_DIR = "scheduler"
# The order objects are applied in: what others refer to first.
MANIFESTS = ("serviceaccount.yaml", "rbac.yaml", "configmap.yaml", "deployment.yaml")
CHECKSUM_ANNOTATION = "kubelab.io/config-checksum"
RUN_AS_USER = 65532  # the numeric non-root user of scheduler/Containerfile
FIELD_MANAGER = "kubelab"

Echo = Callable[[str], None]


class DeployError(UserError):
    """deploy-scheduler failed; the message says at which step and what to look at."""


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


def render_config(lab: Lab) -> str:
    s = lab.scheduler
    return render(f"{TEMPLATE_DIR}/config.yaml.j2", name=s.name, namespace=s.namespace,
                  leader_elect=s.leader_elect, port=s.port,
                  network_aware=s.network_aware, least_loaded=s.least_loaded)


def config_checksum(config_text: str) -> str:
    return hashlib.sha256(config_text.encode()).hexdigest()


def render_manifests(lab: Lab, image: str) -> list[Manifest]:
    """Every object deploy-scheduler applies, as text, in apply order."""
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
    }
    return [Manifest(name, render(f"{TEMPLATE_DIR}/{name}.j2", **values)) for name in MANIFESTS]


def write_manifests(manifests: list[Manifest], directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, manifest in enumerate(manifests, start=1):
        path = directory / f"{index:02d}-{manifest.filename}"
        path.write_text(manifest.text)
        paths.append(path)
    return paths


# ---------------------------------------------------------------------------------------------------
# Image: build (host or control-plane VM) and side-load (pyinfra)
# ---------------------------------------------------------------------------------------------------

def _connected_state(inventory: Any):
    """A pyinfra State over the inventory with every host connected; non-root SSH users get sudo."""
    from pyinfra.api import Config, State
    from pyinfra.api.connect import connect_all

    from labkit.provision import default_sudo

    default_sudo(inventory)
    state = State(inventory, Config(), check_for_changes=False)
    connect_all(state)
    if state.failed_hosts:
        names = ", ".join(sorted(h.name for h in state.failed_hosts))
        raise DeployError(f"could not connect over SSH to {names}; is the lab up? (./lab status)")
    return state


def _outcomes(state: Any, op_hash: str) -> list[tuple[str, str, str]]:
    """(host, "changed" | "ok" | "FAILED", output when failed) for each host that ran the operation."""
    rows = []
    for host, ops in state.ops.items():
        if op_hash in ops and ops[op_hash].operation_meta.is_complete():
            meta = ops[op_hash].operation_meta
            if meta.did_error():
                output = "\n".join(part for part in (meta.stdout, meta.stderr) if part) or "(no output)"
                rows.append((host.name, "FAILED", output))
            else:
                rows.append((host.name, "changed" if meta.did_change() else "ok", ""))
    return rows


def _run_deploy(inventory: Any, what: str, deploy_func: Callable[..., None], *args: Any,
                echo: Echo = print) -> None:
    """Run one deploy over the inventory, one progress line per step; failures carry the node's output."""
    from pyinfra.api import BaseStateCallback
    from pyinfra.api.connect import disconnect_all
    from pyinfra.api.deploy import add_deploy
    from pyinfra.api.exceptions import PyinfraError
    from pyinfra.api.operations import run_ops

    class StepLines(BaseStateCallback):
        def operation_end(self, state: Any, op_hash: str) -> None:  # type: ignore[override]
            names = ", ".join(sorted(state.get_op_meta(op_hash).names))
            echo(f"  {names}: " + ", ".join(f"{h} {o}" for h, o, _ in sorted(_outcomes(state, op_hash))))

    state = _connected_state(inventory)
    state.add_callback_handler(StepLines())
    try:
        add_deploy(state, deploy_func, *args)
        try:
            run_ops(state)
        except PyinfraError as err:
            problem = str(err)
        else:
            problem = ""
        failures = [f"{host} at {', '.join(sorted(state.get_op_meta(op_hash).names))}:\n{output}"
                    for op_hash in state.get_op_order() for host, outcome, output in _outcomes(state, op_hash)
                    if outcome == "FAILED"]
        if problem or failures or state.failed_hosts:
            raise DeployError(f"{what} failed: " + ("\n".join(failures) or problem or
                              ", ".join(sorted(h.name for h in state.failed_hosts))))
    finally:
        disconnect_all(state)


def side_load(inventory: Any, image: BuiltImage, echo: Echo = print) -> dict[str, str]:
    """Import the image on every node; returns node -> "imported" or "present" (already had it)."""
    from deploys.scheduler_image import side_load_scheduler_image

    report: dict[str, str] = {}
    _run_deploy(inventory, "side-loading the scheduler image", side_load_scheduler_image,
                image.ref, image.image_id, str(image.archive), report, echo=echo)
    for node, outcome in sorted(report.items()):
        echo(f"{node}: {image.ref} {'imported' if outcome == 'imported' else 'already present, skipped'}")
    return report


def build_in_vm(inventory: Any, plan: BuildPlan, echo: Echo = print) -> BuiltImage:
    """Build on the control plane: the host has none of docker, podman or buildah."""
    from deploys.scheduler_image import build_scheduler_image_in_vm
    from labkit.image import context_tarball

    echo(f"no working docker, podman or buildah here: building {plan.ref} on the control plane")
    tarball = context_tarball(plan)
    started = time.monotonic()
    partial = plan.archive.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    _run_deploy(inventory, "building the scheduler image on the control plane", build_scheduler_image_in_vm,
                str(tarball), plan.ref, plan.base.ref, plan.base.python_version, plan.platform, str(partial),
                echo=echo)
    if not partial.exists():
        raise DeployError("the build on the control plane produced no archive: does the inventory have a host "
                          "with node role control-plane?")
    partial.rename(plan.archive)
    return plan.result("vm", time.monotonic() - started)


def ensure_image(lab: Lab, inventory: Any, out_dir: Path, echo: Echo = print) -> BuiltImage:
    """The archive for the scheduler's current content: reused when built before, else built where a tool
    works (build tools are probed only when there is something to build)."""
    from labkit.image import build_planned, find_builder, plan_build

    plan = plan_build(out_dir, lab.scheduler.image)
    if plan.done:
        echo(f"image {plan.ref} already built: {plan.archive}")
        return plan.result("cached", 0.0)
    builder = find_builder()
    image = build_in_vm(inventory, plan, echo) if builder is None else build_planned(plan, builder, echo)
    echo(f"built {image.ref} with {image.builder} in {image.seconds:.0f}s")
    return image


# ---------------------------------------------------------------------------------------------------
# Apply (server-side) and rollout
# ---------------------------------------------------------------------------------------------------

# kind -> (API path prefix, plural, namespaced): the kinds templates/scheduler/ renders.
RESOURCES = {
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
}


def object_path(obj: dict[str, Any]) -> str:
    try:
        prefix, plural, namespaced = RESOURCES[obj["kind"]]
    except KeyError:
        raise DeployError(f"no API path known for kind {obj.get('kind')!r}; add it to RESOURCES") from None
    meta = obj["metadata"]
    middle = f"/namespaces/{meta['namespace']}" if namespaced else ""
    return f"{prefix}{middle}/{plural}/{meta['name']}"


def describe(obj: dict[str, Any]) -> str:
    return f"{obj['kind'].lower()}/{obj['metadata']['name']}"


def connect(kubeconfig: Path) -> Kube:
    """The lab's API server through the kubeconfig (the placement runner's client: same auth and errors)."""
    from labkit.kube import Kube, KubeconfigError

    try:
        return Kube.from_kubeconfig(kubeconfig)
    except KubeconfigError as err:
        raise DeployError(str(err)) from None


def apply(kube: Kube, manifests: list[Manifest], echo: Echo = print) -> dict[str, str]:
    """Server-side apply every object; returns describe(obj) -> created / configured / unchanged."""
    outcome: dict[str, str] = {}
    for manifest in manifests:
        for obj in manifest.objects:
            path = object_path(obj)
            existing = kube.get_or_none(path)
            before = existing["metadata"]["resourceVersion"] if existing else None
            after = kube.request("PATCH", path, body=obj,  # the client sends it as JSON, which is YAML
                                 query={"fieldManager": FIELD_MANAGER, "force": "true"},
                                 content_type="application/apply-patch+yaml")
            result = ("created" if before is None else
                      "unchanged" if after["metadata"]["resourceVersion"] == before else "configured")
            outcome[describe(obj)] = result
            echo(f"{describe(obj)} {result}")
    return outcome


@dataclass(frozen=True)
class Rollout:
    done: bool
    message: str
    failed: bool = False


def rollout_status(deployment: dict[str, Any]) -> Rollout:
    """The Deployment's rollout as `kubectl rollout status` judges it."""
    spec, status = deployment.get("spec", {}), deployment.get("status", {})
    name = deployment["metadata"]["name"]
    if deployment["metadata"].get("generation", 0) > status.get("observedGeneration", 0):
        return Rollout(False, "waiting for the deployment controller to observe the new spec")
    for condition in status.get("conditions", []):
        if condition.get("type") == "Progressing" and condition.get("reason") == "ProgressDeadlineExceeded":
            return Rollout(False, f"deployment {name!r} exceeded its progress deadline", failed=True)
    want = spec.get("replicas", 1)
    updated = status.get("updatedReplicas", 0)
    total = status.get("replicas", 0)
    available = status.get("availableReplicas", 0)
    if updated < want:
        return Rollout(False, f"{updated} of {want} new replicas have been updated")
    if total > updated:
        return Rollout(False, f"{total - updated} old replicas are pending termination")
    if available < updated:
        return Rollout(False, f"{available} of {updated} updated replicas are available")
    return Rollout(True, f"deployment {name!r} successfully rolled out")


def pod_log(kube: Kube, namespace: str, name: str, tail_lines: int) -> str:
    """The pod's last log lines, or why there are none (a pod that never started has no log).

    Logs are plain text, which the project's raw-JSON client does not read: the official client's log call,
    with Kube's credentials, does (only when a rollout failed, so its own connection pool costs nothing).
    """
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    from labkit.kube import REQUEST_TIMEOUT

    with client.ApiClient(kube.client.configuration) as api:
        try:
            # _preload_content=False: the raw text (the client would parse a log line that looks like JSON)
            response = client.CoreV1Api(api).read_namespaced_pod_log(
                name, namespace, tail_lines=tail_lines, _preload_content=False, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as err:  # its str() carries every response header
            return f"(no logs: {err.status} {err.reason})"
        except HTTPError as err:
            return f"(no logs: {err})"
    return response.data.decode()


def diagnose(kube: Kube, namespace: str, selector: dict[str, str], tail_lines: int = 20) -> str:
    """The scheduler pods' phase, recent events and last log lines: what to read when a rollout fails."""
    from labkit.kube import pod_path

    labels = ",".join(f"{k}={v}" for k, v in selector.items())
    pods = kube.items(pod_path(namespace), labelSelector=labels)
    if not pods:
        return f"no pods match {labels} in {namespace}: see `kubectl -n {namespace} describe deployment`"
    parts = []
    for pod in pods:
        name = pod["metadata"]["name"]
        waiting = [cs.get("state", {}).get("waiting", {}) for cs in pod.get("status", {}).get("containerStatuses", [])]
        reasons = ", ".join(f"{w['reason']}: {w.get('message', '')}".rstrip(": ") for w in waiting if w.get("reason"))
        parts.append(f"pod {name}: {pod.get('status', {}).get('phase', '?')}" + (f" ({reasons})" if reasons else ""))
        for event in kube.pod_events(namespace, name)[-10:]:
            parts.append(f"  event {event.get('type', '')} {event.get('reason', '')}: {event.get('message', '')}")
        parts.append(f"  last {tail_lines} log lines:")
        parts.extend(f"    {line}" for line in pod_log(kube, namespace, name, tail_lines).splitlines())
    return "\n".join(parts)


def wait_for_rollout(kube: Kube, lab: Lab, timeout: float = 300, poll: float = 2,
                     echo: Echo = print, clock: Callable[[], float] = time.monotonic,
                     sleep: Callable[[float], None] = time.sleep) -> None:
    s = lab.scheduler
    path = f"/apis/apps/v1/namespaces/{s.namespace}/deployments/{s.name}"
    deadline = clock() + timeout
    last = ""
    while True:
        state = rollout_status(kube.get(path))
        if state.message != last:
            echo(f"rollout: {state.message}")
            last = state.message
        if state.done:
            return
        if state.failed or clock() > deadline:
            why = state.message if state.failed else f"not rolled out after {timeout:.0f}s ({state.message})"
            raise DeployError(f"the scheduler did not roll out: {why}\n"
                              + diagnose(kube, s.namespace, selector_labels(lab)))
        sleep(poll)


# ---------------------------------------------------------------------------------------------------
# The verb
# ---------------------------------------------------------------------------------------------------

def deploy_scheduler(lab: Lab, kubeconfig: Path, inventory: Any, image_dir: Path,
                     timeout: float = 300, echo: Echo = print) -> dict[str, Any]:
    """Everything `invoke deploy-scheduler` does; returns what happened at each step."""
    from labkit.kube import KubeError

    image = ensure_image(lab, inventory, image_dir, echo)
    started = time.monotonic()
    nodes = side_load(inventory, image, echo)
    side_load_seconds = time.monotonic() - started
    kube = connect(kubeconfig)
    try:
        applied = apply(kube, render_manifests(lab, image.ref), echo)
        wait_for_rollout(kube, lab, timeout, echo=echo)
    except KubeError as err:  # the user sees one kind of deploy-scheduler error
        raise DeployError(str(err)) from None
    finally:
        kube.close()
    return {"image": image, "nodes": nodes, "side_load_seconds": side_load_seconds, "applied": applied}


def lab_inventory(lab: Lab, inventory_file: str | Path | None = None) -> Any:
    """The lab's machines as recorded by `up`, or the hosts of a pyinfra inventory file (real machines)."""
    if inventory_file:
        from labkit.provision import load_inventory  # the CLI's loader, run on a pyinfra state as it needs

        return load_inventory(inventory_file)
    from labkit.inventory import pyinfra_inventory, recorded_groups

    return pyinfra_inventory(recorded_groups(lab))


def run_verb(lab: Lab, kubeconfig: Path | None = None, render_only: Path | None = None,
             inventory_file: str | Path | None = None, timeout: float = 300, echo: Echo = print) -> None:
    """What `invoke deploy-scheduler` and `python -m labkit.scheduler_deploy` do."""
    from labkit.image import image_ref
    from labkit.paths import LabPaths

    if render_only:
        for path in write_manifests(render_manifests(lab, image_ref(lab.scheduler.image)), render_only):
            echo(f"wrote {path}")
        return
    paths = LabPaths.for_lab(lab.name)
    deploy_scheduler(lab, kubeconfig or paths.kubeconfig, lab_inventory(lab, inventory_file),
                     paths.state_dir / "images", timeout, echo)


def main(argv: list[str] | None = None, echo: Echo = print) -> int:
    parser = argparse.ArgumentParser(prog="python -m labkit.scheduler_deploy",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--lab", type=Path, help="lab definition (default: lab.yaml)")
    parser.add_argument("--kubeconfig", type=Path, help="default: the lab's exported .lab/<name>/kubeconfig")
    parser.add_argument("--inventory", help="pyinfra inventory file of real machines (default: the lab's VMs)")
    parser.add_argument("--render-only", type=Path, metavar="DIR",
                        help="write the manifests that would be applied to DIR and stop")
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for the rollout")
    args = parser.parse_args(argv)
    from labkit.image import ImageError
    from labkit.inventory import InventoryMissing

    try:
        run_verb(load_lab(args.lab), args.kubeconfig, args.render_only, args.inventory, args.timeout, echo)
    except LabError as err:
        print(err, file=sys.stderr)
        return 2
    except (DeployError, ImageError, InventoryMissing) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
