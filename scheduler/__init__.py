"""kubelab's bundled Python scheduler.

A second scheduler for a Kubernetes cluster: pods opt in with ``spec.schedulerName``. Its subpackages:
- ``framework``: the public plugin API (``Plugin``, ``Status``, ``ClusterView``...) and the pure decision
  code (filter, score, pick; preemption), which imports no plugin;
- ``model``: pods and nodes as the plugins read them (pure);
- ``plugins``: kube-scheduler's in-tree plugins, written against ``framework`` and ``model`` only;
- ``runtime``: what talks to the API server: informers, event handlers, cache, queue, the scheduling loop,
  binder, events, leader election, metrics and health endpoints;
- ``extender``: the same plugins served to kube-scheduler as an HTTP extender.
``config`` reads the KubeSchedulerConfiguration file and ``cli`` is ``python -m scheduler --config FILE``.
"""

__version__ = "0.1.0"
