"""kubelab's bundled Python scheduler.

A second scheduler for a Kubernetes cluster: pods opt in with ``spec.schedulerName``. The pure decision
core (``model``, ``cluster_event``, ``plugins``, ``framework``, and ``config`` apart from reading its file)
holds no I/O; the runtime modules watch the API (``informer``, ``eventhandlers``), queue pods (``queue``),
decide and bind them (``schedule_one``, ``binder``) and report events (``events``), wired together in
``scheduler.scheduler``. Run it with ``python -m scheduler --config FILE``.
"""

__version__ = "0.1.0"
# The kube-scheduler minor whose decisions this scheduler follows (the lab's Kubernetes minor): its plugins'
# formulas, reasons and FailedScheduling messages are that release's, checked against real decisions of it
# (tests/scheduler/test_kube_scheduler_corpus.py).
KUBE_SCHEDULER_VERSION = "1.36"
