"""Kubernetes API test server: real HTTP, real API semantics, in-process test hooks.

A stand-in for kube-apiserver + etcd for the API test suites (marker `api`). Clients talk to it over
HTTP/1.1 on 127.0.0.1 with the official `kubernetes` client (or anything else). It keeps the rules
the scheduler and the placement runner rely on, each implemented where its docstring/comment cites
the Kubernetes documentation or source it follows.

Quick start
-----------
In a test (fixtures from kubeapi_testserver/fixtures.py; add `pytest_plugins = ["kubeapi_testserver.fixtures"]`
to the top-level tests/conftest.py, or `from kubeapi_testserver.fixtures import kube_api,
kube_api_kubeconfig  # noqa: F401` in your suite's conftest.py)::

    def test_binds(kube_api, kube_api_kubeconfig):
        kube_api.add_nodes(3, cpu="2", memory="4Gi")                # node-0..node-2, Ready
        kube_api.add_pod("p1", cpu="500m", scheduler_name="my-scheduler")
        run_my_scheduler(kubeconfig=kube_api_kubeconfig)            # kubernetes.config.load_kube_config works
        kube_api.wait_for(lambda: kube_api.bound_pods().get("default/p1"))
        assert kube_api.request_count("create", "pods/binding") == 1

Without pytest::

    from kubeapi_testserver import KubeApiServer, running_server
    with running_server() as server:          # or KubeApiServer().start() ... .stop()
        server.write_kubeconfig("/tmp/kubeconfig")
        print(server.url)

By hand: `python -m kubeapi_testserver --port 8001 --kubeconfig /tmp/kc --nodes 3` (Ctrl-C stops it).
Its own throughput: `python -m kubeapi_testserver.bench_api --nodes 5000 --pods 5000`.

Not served: dryRun (ignored: the request is carried out), resource types
not listed below (services, daemonsets, ...).

Fixtures: `kube_api` (a fresh started KubeApiServer per test), `kube_api_kubeconfig` (Path),
`kube_api_client` (official ApiClient), `core_v1` (CoreV1Api). Context manager `running_server(**kw)`,
`free_port()`. A stopped server can be start()ed again on the same port with its objects kept (an API
server restart); `KubeApiServer(port=free_port())` + write_kubeconfig() before start() gives a
kubeconfig for a server that is not up yet.

Served API
----------
- core/v1: namespaces (+status), nodes (+status), pods (+status, +binding), events, configmaps;
  POST namespaces/{ns}/bindings (legacy binding); coordination.k8s.io/v1 leases;
  events.k8s.io/v1 events (same stored objects as core/v1 events, converted field by field);
  apps/v1 deployments (+status; stored and served only, no controller acts on them);
  policy/v1 poddisruptionbudgets (+status; no disruption controller: tests write status.disruptionsAllowed
  and status.disruptedPods themselves); scheduling.k8s.io/v1 priorityclasses (preemptionPolicy defaulted);
  core/v1 persistentvolumeclaims and persistentvolumes, storage.k8s.io/v1 storageclasses (their v1
  defaults: status.phase Pending at create, reclaimPolicy Delete, volumeBindingMode Immediate; no PV
  controller: tests bind a claim by writing spec.volumeName, the bind-completed annotation and phase).
  scheduling.k8s.io/v1alpha2 workloads and podgroups (+status): the Workload API as kube-apiserver 1.36 serves
  it with its alpha version enabled; stored and served only (no controller; pods keep
  spec.schedulingGroup, as with the GenericWorkload gate on).
  resource.k8s.io/v1 resourceslices, deviceclasses, resourceclaims (+status) and resourceclaimtemplates:
  stored and served only (a claim's status is cleared at create and written through /status; no DRA driver,
  no resourceclaim controller).
  node.k8s.io/v1 runtimeclasses and core/v1 limitranges: stored and served only (read by explain --what-if;
  pods created here get no RuntimeClass overhead and no LimitRange defaults).
  core/v1 serviceaccounts and rbac.authorization.k8s.io/v1 clusterroles, clusterrolebindings, roles and
  rolebindings (stored and served only: no authorizer reads them, every request is allowed; roleRef is not
  held immutable).
  apiextensions.k8s.io/v1 customresourcedefinitions, and the kinds they define once created: every verb,
  namespaced or cluster scoped, /status when declared, pruned and validated against the version's
  openAPIV3Schema, no longer served once the CRD is deleted (custom_resources.py says what it models).
  pods/log: text/plain from lines the test writes (container, previous, sinceSeconds, follow), with the
  API server's and kubelet's 400s (kubeapi_testserver/pod_logs.py says what it models).
  Discovery: /version, /api, /apis, /api/v1, /apis/{group}/v1, /healthz, /readyz, /livez.
- Verbs: get, list (limit/continue pages read at the first page's revision; resourceVersionMatch=Exact
  reads a past revision; both 410 once compacted), watch, create (generateName, uid, creationTimestamp,
  resourceVersion; 201), update (PUT; metadata.resourceVersion precondition -> 409 Conflict),
  patch (merge, strategic-merge for maps, keyed lists like status.conditions, $patch; json-patch),
  delete (DeleteOptions preconditions), deletecollection; server-side apply reduced to create-or-merge
  (Api.apply says what is not modelled: field ownership and conflicts).
- The shape and weight of kube-apiserver v1.36.2's answers (tests/kubeapi/test_real_traffic_shape.py holds
  them within 10% of recorded real traffic): managedFields (managed_fields.py), and on API requests the
  ServiceAccount admission's projected token volume and TaintNodesByCondition's not-ready taint on new nodes
  (admission.py); one chunk per watch event, answers over 2 KB chunked.
- Pods: defaults (schedulerName default-scheduler, default not-ready/unreachable
  NoExecute tolerations, container terminationMessagePath/Policy and imagePullPolicy, status Pending +
  qosClass); the Priority admission plugin's effect at create
  (spec.priorityClassName -> spec.priority and spec.preemptionPolicy, else a globalDefault class, else
  priority 0; an unknown class or a stated priority/policy differing from the class's is 403 with the
  plugin's message); main-resource updates keep status, /status
  keeps spec; spec changes other than images, activeDeadlineSeconds, terminationGracePeriodSeconds
  and added tolerations are 422 Invalid.
  Deletion is immediate by default (no kubelet here to finish a graceful delete);
  KubeApiServer(graceful_pod_deletion=True) marks bound pods with deletionTimestamp instead, and
  finish_pod_deletion(name, ns) plays the kubelet. Namespace deletion deletes everything in it
  before returning (Terminating, then gone).
- One global resourceVersion; watch (`?watch=true`) from a resourceVersion streams later
  ADDED/MODIFIED/DELETED, BOOKMARK with allowWatchBookmarks (every `bookmark_interval` s without
  events, and 2 s before the watch's deadline as the watch cache does), honours timeoutSeconds; no resourceVersion or "0" starts with ADDED
  for current objects; an RV older than the history window gets an ERROR event with Status 410
  Expired "too old resource version: N (M)". Objects leaving a selector arrive as DELETED.
- fieldSelector (per resource; pods: metadata.name, metadata.namespace, spec.nodeName,
  spec.schedulerName, status.phase, ...; = == != joined by commas) and labelSelector
  (= == != in notin exists !key) on list, watch and deletecollection.
- Errors are metav1.Status bodies: NotFound, AlreadyExists, Conflict, Expired/Gone, Forbidden,
  Invalid, BadRequest, with the real messages (see errors.py).

Test hooks (methods of KubeApiServer; all changes bump resourceVersion and reach watchers)
------------------------------------------------------------------------------------------
An update that changes nothing is not written (no new resourceVersion, no watch event), as in the API.
- Objects: add_node(name | dict, cpu=, memory=, pods=, labels=, taints=, ready=, unschedulable=),
  add_nodes(n, prefix="node-"), update_node(name, patch_dict | fn), remove_node(name),
  set_node_ready(name, ready, taint=True), add_pod(name | dict, namespace, cpu=, memory=,
  scheduler_name=, node_name=, labels=, annotations=, node_selector=, tolerations=, validate=True),
  add_pods(n, ...), update_pod(name, patch | fn, namespace), remove_pod(name, namespace),
  write_pod_log(name, text, namespace, container=, previous=, at=), end_pod_log(name, namespace, container=),
  add_namespace(name), create_object/update_object/delete_object/get_object/list_objects(storage, ...)
  with storage one of namespaces, nodes, pods, events, configmaps, leases, deployments,
  poddisruptionbudgets, priorityclasses, persistentvolumeclaims, persistentvolumes, storageclasses,
  workloads, podgroups, resourceslices, deviceclasses, resourceclaims, resourceclaimtemplates,
  runtimeclasses, limitranges, serviceaccounts, clusterroles, clusterrolebindings, roles, rolebindings,
  customresourcedefinitions, or a custom resource's "<plural>.<group>" (its CRD's name).
  validate=False stores a pod the real API would refuse (e.g. a malformed quantity).
  Builders: objects.make_node(...), objects.make_pod(...).
- Reads: pods(ns), nodes(), events(ns) (core/v1 form), bound_pods() -> {"ns/name": node},
  terminating_pods(ns).
- History/watches: compact_history() (later watches from older RVs get 410), drop_watches(graceful=False)
  (cuts every open watch connection; graceful=True ends the responses cleanly), open_watches,
  resource_version.
- Failures: fail_next(count, code, path=regex, method=, verb=, resource="pods/binding", message=,
  reason=, retry_after=) answers the next matching requests with that Status (403 gets the RBAC
  wording), clear_failures() (hooks too). storage_outage("unavailable" | "hang") / storage_restored():
  etcd unreachable behind a running API server (bindings 409 with the etcd client's error, other requests
  500; or every request held until restored); open watches stay open.
- Orderings: before_next(count, action, path=, method=, verb=, resource=) runs action(record) in the request's
  thread just before matching requests are served (delete and re-create a pod before a write about the old
  one lands, or hold a request back), so a race can be made to lose every time.
- A metadata.uid in a write's body that differs from the stored object's fails it (PATCH 422 Invalid,
  "field is immutable"; PUT 409 "Precondition failed: UID in precondition"), as kube-apiserver answers.
- Counters: requests (list of RequestRecord(method, path, verb, resource, group, namespace, name,
  code)), request_count(verb, resource, namespace=, code=, method=, path=regex), reset_requests().
- wait_for(predicate, timeout=10) polls until truthy (raises TimeoutError).
- Constructor options: KubeApiServer(host="127.0.0.1", port=0, token=None, history_limit=200_000,
  bookmark_interval=5.0, default_watch_timeout=1800.0, user="system:anonymous" (the user named in
  injected 403 messages), graceful_pod_deletion=False).
- KubeApiServer(token="t") requires "Authorization: Bearer t" (401 otherwise); the kubeconfig
  carries the token. Default: no authentication.
"""

from kubeapi_testserver.fixtures import free_port, running_server
from kubeapi_testserver.objects import make_node, make_pod
from kubeapi_testserver.server import KubeApiServer, RequestRecord

__all__ = ["KubeApiServer", "RequestRecord", "free_port", "make_node", "make_pod", "running_server"]
