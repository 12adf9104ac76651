"""Is the scheduler there? A probe pod it must bind or report on, and when it does not, what the cluster
says instead: the Deployment (missing, scaled to 0, not ready) and the leader Lease, with the fix."""

from __future__ import annotations

import time

from labkit.kube import Kube, pod_path
from labkit.placement.changes import deployment_path
from labkit.placement.explain import SchedulerConfig
from labkit.placement.session import Session


def probe(session: Session) -> str | None:
    """None when the scheduler shows a sign of life (binds a plain pod or reports on it), else why not."""
    name = "probe"
    body = session.pod_manifest(name, "probe", scheduler_name=session.lab.scheduler.name)
    session.kube.create(pod_path(session.namespace), body)

    def alive() -> bool:
        state = session.read(name)
        return bool(state.node or state.events)

    started = time.monotonic()
    ok = session.wait(alive, session.options.probe_seconds)
    session.kube.delete(pod_path(session.namespace, name), grace_seconds=0)
    if ok:
        session.echo(f"scheduler {session.lab.scheduler.name} answered a probe pod in {time.monotonic() - started:.1f} s")
        return None
    return no_scheduler_message(session)


def no_scheduler_message(session: Session) -> str:
    """Why the probe went unanswered, from the Deployment and the Lease, and how to fix it."""
    s = session.lab.scheduler
    facts = []
    deployment = session.kube.get_or_none(deployment_path(s.namespace, s.name))
    if deployment is None:
        facts.append(f"there is no Deployment {s.namespace}/{s.name}")
    else:
        want = (deployment.get("spec") or {}).get("replicas", 1)
        ready = (deployment.get("status") or {}).get("readyReplicas") or 0
        if want == 0:
            facts.append(f"Deployment {s.namespace}/{s.name} is scaled to 0 (an interrupted run?): "
                         f"`kubectl -n {s.namespace} scale deployment/{s.name} --replicas={s.replicas}`")
        else:
            facts.append(f"Deployment {s.namespace}/{s.name} has {ready}/{want} ready replicas: see "
                         f"`kubectl -n {s.namespace} describe deployment/{s.name}` and "
                         f"`kubectl -n {s.namespace} logs deployment/{s.name}`")
    facts.append(lease_fact(session.kube, session.config))
    unanswered = f"a probe pod naming schedulerName {s.name} got no binding and no event within {session.options.probe_seconds:.0f} s"
    how = ("Deploy it with `./lab deploy-scheduler`, or run it beside the cluster with "
           "`python -m scheduler --config FILE --kubeconfig FILE`, then run test-placement again.")
    return f"The scheduler {s.name} is not running in this cluster: {'; '.join(facts)}; {unanswered}. {how}"


def lease_fact(kube: Kube, scheduler_config: SchedulerConfig) -> str:
    """What the scheduler's leader Lease says about who leads, or why there is none."""
    config = scheduler_config.config
    if not config.leaderElection.leaderElect:
        return "its configuration has leader election off, so there is no Lease to check"
    ns, name = config.leaderElection.resourceNamespace, config.lease_name
    lease = kube.get_or_none(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}")
    if lease is None:
        return f"no leader Lease {ns}/{name} exists (no instance ever led)"
    spec = lease.get("spec") or {}
    holder = spec.get("holderIdentity") or "nobody"
    return f"the leader Lease {ns}/{name} is held by {holder} (last renewed {spec.get('renewTime') or 'never'})"
