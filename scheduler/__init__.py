"""kubelab's bundled Python scheduler.

A second scheduler for a Kubernetes cluster: pods opt in with ``spec.schedulerName``. The pure decision
core (``model``, ``plugins``, ``framework``, and ``config`` apart from reading its file) holds no I/O; the
runtime modules watch the API, queue pods, bind them and report events. Run it with
``python -m scheduler --config FILE``.
"""

__version__ = "0.1.0"
