"""labkit.ui.overview: the page's grid and pending groups as one self-contained section for a static report;
its input checked, its data unable to break out of the script. The browser draws it in test_browser_scale."""

from __future__ import annotations

import re

import pytest

from kubeapi_testserver.objects import make_node, make_pod
from labkit.ui.overview import node_view, overview_html
from scheduler.model import NodeInfo, PodInfo


def _node(name: str = "n1", **extra: object) -> dict:
    return {"name": name, "allocatable": {"cpu": 4000, "memory": 1 << 34, "pods": 110},
            "requested": {"cpu": 1000, "memory": 1 << 30, "pods": 3}, **extra}


def test_the_section_is_self_contained() -> None:
    html = overview_html([_node(labels={"a": "</script><script>alert(1)</script>"})],
                         [{"key": "default/p", "reason": "x"}])
    assert html.count("</script>") == 1  # the label's text cannot end the script
    assert not re.findall(r"""(?:src|href)\s*=|@import|url\(""", html)  # nothing fetched
    assert "var KubelabViews" in html and ".kv-cell" in html


@pytest.mark.parametrize(("nodes", "pending", "kwargs", "field"), [
    ([{"allocatable": {}, "requested": {}}], [], {}, "nodes[0].name: required"),
    ([_node(requested={"cpu": "1"})], [], {}, "nodes[0].requested (n1)"),
    ([_node()], [{"reason": "x"}], {}, "pending[0].key: required"),
    ([_node()], [], {"resource": "gpu"}, "resource: 'gpu' is not one of cpu, memory, pods"),
    ([_node()], [], {"element_id": "a b"}, "element_id: 'a b' is not an HTML id"),
])
def test_bad_input_names_the_field(nodes: list, pending: list, kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=re.escape(field)):
        overview_html(nodes, pending, **kwargs)


def test_node_view_counts_what_the_scheduler_counts() -> None:
    node = NodeInfo.from_api(make_node("w1", cpu="4", memory="8Gi", labels={"zone": "z"},
                                       taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]))
    node.add_pod(PodInfo.from_api(make_pod("p", cpu="1500m", memory="1Gi", node_name="w1")))
    view = node_view(node)
    assert view["requested"] == {"cpu": 1500, "memory": 1 << 30, "pods": 1}
    assert view["allocatable"]["cpu"] == 4000 and view["labels"]["zone"] == "z"
    assert view["taints"] == ["gpu=yes:NoSchedule"]
