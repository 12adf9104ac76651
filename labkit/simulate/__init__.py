"""`./lab simulate`: a whole workload run through one or more scheduler profiles in-process, on a simulated
clock, and the outcomes compared side by side.

- ``schema``: the cluster file (Nodes and Pods, or node pools) and the workload file, checked before anything runs;
- ``inputs``: the cluster, the workload's pods and the profiles, built from those files, a live cluster or the lab;
- ``engine``: one profile's run through ``scheduler.testing.Cycles`` (the real framework) on the simulated clock;
- ``report``: what a run came to (bound, pending, utilization, fragmentation, spread, score shares) and the
  side-by-side table and JSON; ``html``: the same as one self-contained page with charts;
- ``cli``: the verb's glue.
"""
