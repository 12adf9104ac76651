"""For plugin authors: build what a plugin reads in a unit test, and check a plugin keeps the contract.

Builders (``builders``) make the real PodInfo, NodeInfo and ClusterView from dicts or YAML as the API
server sends them::

    from scheduler.testing import node_info, pod_info

    pod = pod_info(annotations={"example.com/want-rack": "r1"})
    node = node_info(name="n1", annotations={"example.com/rack": "r1"})
    assert RACK.filter(pod, node).ok

``cluster_from_yaml`` reads a file of Nodes, Pods and Namespaces into nodes (with their bound pods), pending
pods and a ClusterView.

Whole cycles (``cycles``): ``Cycles`` drives the real framework through PreEnqueue, the queue, the
scheduling cycle, Reserve, Permit waits and the binding cycle on such a cluster, with a fake API
(``FakeApi``), a fake clock and a fake ``Handle`` (``FakeHandle``), and returns placements, events and the
pods waiting or gated: plugins that use the points after the filters are unit-tested without a cluster.

Contract checks (``contract``): batch forms equal the per-node forms over generated pods and nodes,
requeue declarations name real fields, args validate; the bundled plugins pass them
(``check_plugin(plugin)`` returns the problems, each naming the plugin and the rule). From a shell::

    python -m scheduler.testing check SOURCE [SOURCE ...]

SOURCE is a plugin module, ``.py`` file or package folder (as ``python -m scheduler --plugins`` takes it,
through ``scheduler.framework.load_registry``); exit 0 when every plugin it declares passes, 1 naming each
plugin and broken rule, 2 when a source cannot be loaded.
"""

from scheduler.testing.builders import (
    Cluster,
    cluster_from_objects,
    cluster_from_yaml,
    cluster_view,
    node_info,
    node_object,
    pod_info,
    pod_object,
)
from scheduler.testing.contract import Problem, check_plugin
from scheduler.testing.cycles import ApiCall, Cycles, FakeApi, FakeClock, FakeHandle, Gated, RecordedEvent

__all__ = [
    "ApiCall",
    "Cluster",
    "Cycles",
    "FakeApi",
    "FakeClock",
    "FakeHandle",
    "Gated",
    "Problem",
    "RecordedEvent",
    "check_plugin",
    "cluster_from_objects",
    "cluster_from_yaml",
    "cluster_view",
    "node_info",
    "node_object",
    "pod_info",
    "pod_object",
]
