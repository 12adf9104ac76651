"""The extender-process benchmark's driver speaks as kube-scheduler v1.36's extender client does.

Checked against upstream: k8s.io/kube-scheduler/extender/v1/types.go (ExtenderArgs: fields Pod *v1.Pod,
Nodes *v1.NodeList, NodeNames *[]string, in that order, no JSON tags, so Go's encoding/json writes the field
names, nil pointers as null, compact), pkg/scheduler/extender.go (HTTPExtender.send: POST
strings.TrimRight(urlPrefix, "/") + "/" + verb, Content-Type application/json; Filter and Prioritize fill
NodeNames when nodeCacheCapable, else Nodes), and pkg/scheduler/scheduler.go (newPodInformer drops
metadata.managedFields, so the pod sent is the informer's, without them). Go's http.Transport adds Host,
User-Agent "Go-http-client/1.1", Content-Length and Accept-Encoding gzip.
"""

from __future__ import annotations

import json

from benchmarks import extender_process
from scheduler.extender import protocol

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
                    "managedFields": [{"manager": "kubectl", "operation": "Update"}]},
       "spec": {"schedulerName": "s", "containers": [{"name": "c", "image": "pause"}]}}


def test_extender_args_are_go_marshal_of_the_node_cache_capable_form() -> None:
    pod = extender_process.as_kube_scheduler_holds_it(POD)
    body = extender_process.extender_args(pod, ["n-1", "n-2"])
    assert list(json.loads(body)) == ["Pod", "Nodes", "NodeNames"]  # the Go struct's field order
    assert body.startswith(b'{"Pod":{') and body.endswith(b',"Nodes":null,"NodeNames":["n-1","n-2"]}')
    assert b": " not in body and b", " not in body  # compact, as json.Marshal writes
    assert "managedFields" not in json.loads(body)["Pod"]["metadata"] and "managedFields" in POD["metadata"]
    args = protocol.parse_args(body)  # the extender reads it as kube-scheduler's request
    assert args.by_name and args.names == ["n-1", "n-2"] and args.pod["metadata"]["uid"] == "u-1"


def test_request_head_is_what_go_net_http_writes_for_httpextender_send() -> None:
    raw = extender_process.go_request("filter", "127.0.0.1:8888", b'{"Pod":{}}')
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /filter HTTP/1.1" and body == b'{"Pod":{}}'
    assert sorted(lines[1:]) == sorted(["Host: 127.0.0.1:8888", "User-Agent: Go-http-client/1.1",
                                        "Content-Length: 10", "Content-Type: application/json",
                                        "Accept-Encoding: gzip"])
