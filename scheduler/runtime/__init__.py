"""The scheduler's runtime: everything that talks to the API server or runs in threads.

``client`` (raw-JSON HTTP client), ``informer`` (list+watch), ``eventhandlers`` (watch events into the
cache and the queue), ``cache`` (nodes and pods, assumed pods, snapshots), ``queue`` (active, backoff,
unschedulable), ``nominator`` and ``pending`` (pods waiting for room), ``schedule_one`` (one scheduling
cycle: decide with ``scheduler.framework``, assume, preempt), ``binder`` (asynchronous bind),
``preemption_api`` and ``budgets`` (victims and PodDisruptionBudgets), ``events`` (Event objects and pod
conditions), ``leader`` (Lease election), ``metrics`` and ``server`` (Prometheus and health endpoints),
wired together in ``scheduler.runtime.scheduler``.
"""
