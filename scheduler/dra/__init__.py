"""Dynamic Resource Allocation (resource.k8s.io/v1, structured parameters) as kube-scheduler 1.36 does it, as a
library for the DynamicResources plugin (as ``scheduler.quantity`` is one for NodeResourcesFit):

- ``model``: the API objects read: ResourceSlices grouped into pools (``nodeName``, ``nodeSelector`` or
  ``allNodes``), DeviceClasses, ResourceClaims (requests, ``firstAvailable`` subrequests, constraints,
  ``status.allocation``), and what this scheduler refuses of them (``Unsupported``, naming the field);
- ``inventory``: the devices of a cluster's slices by pool and the devices in use (claims allocated or
  assumed), computed once per change of the watched kinds;
- ``allocator``: the deterministic search kube-scheduler's structured allocator makes on one node, and the
  ``status.allocation`` it writes;
- ``cel``: the CEL device selectors (``compile_selector``, ``device_view``).
"""
