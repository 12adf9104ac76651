"""A plugin from outside the tree reads a field the model does not parse (a node annotation, through
``node.raw``) and declares it in ``requeue_on_fields``: the running scheduler retries the pods it rejected
when an update changes that field, and not when it changes another one. The plugin is a file in a
temporary folder, loaded and enabled the way ``python -m scheduler --plugins FILE --config`` does
(load_registry, parse_config, build_profiles), into the real Scheduler object (informer handlers, queue,
scheduling cycle) in-process; the API client is a stand-in nothing here calls for a decision (events are
posted by a background worker and dropped). Also: the scheduler's cache keeps the objects of pods counted
on nodes exactly when an enabled plugin declares it reads them."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from scheduler.config import parse_config
from scheduler.framework import build_profiles, load_registry
from scheduler.runtime.client import RequestCounts
from scheduler.runtime.queue import ACTIVE, BACKOFF, UNSCHEDULABLE
from scheduler.runtime.scheduler import RuntimeSettings, Scheduler
from tests.scheduler.builders import node_obj, pod_obj

RACK = "example.com/rack"
WANT = "example.com/want-rack"

USER_PLUGIN = f'''
from scheduler.framework import Code, Plugin, Status

def pre_filter(pod, args):
    want = pod.raw["metadata"].get("annotations", {{}}).get("{WANT}")
    return None if want is None else (want, Status(Code.UNSCHEDULABLE, ("node(s) in another rack",), "Rack"))

def filter_node(state, node):
    want, reject = state
    return None if node.raw["metadata"].get("annotations", {{}}).get("{RACK}") == want else reject

PLUGINS = [Plugin("Rack", pre_filter=pre_filter, filter_node=filter_node, requeue_on_fields=REQUEUE_ON_FIELDS)]
'''


CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
          "profiles": [{"schedulerName": "my-custom-scheduler",
                        "plugins": {"filter": {"enabled": [{"name": "Rack"}]}}}]}


class _StandInClient:
    """Nothing on the decision path calls the API; the event workers' calls land here and do nothing."""

    host = "http://stand-in.invalid"
    counts = RequestCounts()

    def with_own_limiter(self) -> _StandInClient:
        return self

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: {}


def _user_plugin(tmp_path: Path, fields: tuple[str, ...]) -> Path:
    """The plugin file a user keeps in their own folder (named for the test: the loader imports a file under
    its stem, once per process)."""
    source = tmp_path / f"rack_{tmp_path.name}.py"
    source.write_text(f"REQUEUE_ON_FIELDS = {fields!r}\n" + textwrap.dedent(USER_PLUGIN))
    return source


def _rack_node(**annotations: str) -> dict[str, Any]:
    obj = node_obj("n1", labels={"kubernetes.io/hostname": "n1"})
    obj["metadata"]["annotations"] = annotations
    return obj


@pytest.fixture
def scheduler_with(tmp_path):
    made: list[Scheduler] = []

    def make(fields: tuple[str, ...]) -> Scheduler:
        registry = load_registry([str(_user_plugin(tmp_path, fields))], entry_points=False)
        config = parse_config(CONFIG, registry=registry)
        sched = Scheduler(_StandInClient(), build_profiles(config, registry),  # type: ignore[arg-type]
                          RuntimeSettings(serve=(), seed=1))
        made.append(sched)
        return sched

    yield make
    for sched in made:
        sched.recorder.close()


def _rejected(sched: Scheduler, **annotations: str) -> str:
    """Node n1 in rack r2, a pod wanting rack r1: decided, rejected by Rack, waiting as unschedulable."""
    sched.handlers.node_changed(_rack_node(**{RACK: "r2"}, **annotations))
    sched.handlers.pod_changed(pod_obj("p", annotations={WANT: "r1"}))
    qp = sched.queue.pop(timeout=0)
    assert qp is not None
    sched.cycle.schedule_one(qp)
    assert sched.queue.where("default/p") == UNSCHEDULABLE
    return "default/p"


def test_a_declared_node_field_changing_requeues_the_pod_it_rejected(scheduler_with):
    sched = scheduler_with((f"node.metadata.annotations['{RACK}']",))
    key = _rejected(sched)
    sched.handlers.node_changed(_rack_node(**{RACK: "r1"}))
    assert sched.queue.where(key) in (ACTIVE, BACKOFF)


def test_undeclared_node_fields_changing_leave_it_waiting(scheduler_with):
    sched = scheduler_with((f"node.metadata.annotations['{RACK}']",))
    key = _rejected(sched)
    sched.handlers.node_changed(_rack_node(**{RACK: "r2", "example.com/owner": "team-b"}))  # another annotation
    sched.handlers.node_changed(_rack_node(**{RACK: "r2", "example.com/owner": "team-b"}))  # a heartbeat
    relabelled = _rack_node(**{RACK: "r2", "example.com/owner": "team-b"})
    relabelled["metadata"]["labels"]["disk"] = "ssd"  # a label: an event the plugin does not declare
    sched.handlers.node_changed(relabelled)
    assert sched.queue.where(key) == UNSCHEDULABLE


def test_a_declared_pod_field_changing_requeues_it(scheduler_with):
    sched = scheduler_with((f"pod.metadata.annotations['{WANT}']",))
    key = _rejected(sched)
    sched.handlers.pod_changed(pod_obj("p", annotations={WANT: "r1"}, labels={"tier": "web"}))
    assert sched.queue.where(key) == UNSCHEDULABLE  # a label: not declared
    sched.handlers.pod_changed(pod_obj("p", annotations={WANT: "r2"}))
    assert sched.queue.where(key) in (ACTIVE, BACKOFF)


def test_a_new_node_still_requeues_a_plugin_declaring_only_fields(scheduler_with):
    sched = scheduler_with((f"node.metadata.annotations['{RACK}']",))
    key = _rejected(sched)
    other = node_obj("n2")
    sched.handlers.node_changed(other)
    assert sched.queue.where(key) in (ACTIVE, BACKOFF)


COUNTING_PLUGIN = '''
from scheduler.framework import Plugin

def pre_score(pod, args):
    return None

def score_node(state, node):
    return sum(p.raw["metadata"].get("annotations", {}).get("example.com/heavy") == "yes"
               for p in node.pods.values())

PLUGINS = [Plugin("Heavy", pre_score=pre_score, score_node=score_node, reads_counted_pods_raw=READS)]
'''


def test_the_cache_keeps_counted_pods_objects_only_for_a_plugin_that_reads_them(tmp_path):
    for reads in (True, False):
        source = tmp_path / f"heavy_{reads}.py"
        source.write_text(f"READS = {reads}\n" + textwrap.dedent(COUNTING_PLUGIN))
        registry = load_registry([str(source)], entry_points=False)
        config = {**CONFIG, "profiles": [{"schedulerName": "my-custom-scheduler",
                                          "plugins": {"score": {"enabled": [{"name": "Heavy"}]}}}]}
        sched = Scheduler(_StandInClient(), build_profiles(parse_config(config, registry=registry), registry),
                          RuntimeSettings(serve=(), seed=1))  # type: ignore[arg-type]
        try:
            sched.handlers.node_changed(_rack_node())
            sched.handlers.pod_changed(pod_obj("bound", node_name="n1", annotations={"example.com/heavy": "yes"}))
            node = sched.cache.snapshot().get("n1")
            assert node is not None
            plugin = registry["Heavy"]
            if reads:
                assert plugin.score_node(None, node) == 1
            else:
                with pytest.raises(LookupError, match="reads_counted_pods_raw=True"):
                    plugin.score_node(None, node)
        finally:
            sched.recorder.close()
