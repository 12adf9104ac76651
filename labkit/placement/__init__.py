"""`test-placement`: prove where the bundled scheduler puts pods, and explain every miss.

Modules: scenarios (scenarios.yaml as data), session (one run's namespace, test pods, waits and node label),
probe (is the scheduler there, and if not, why), checks (one check per kind of expectation), changes (what
a run changes and its undo), explain (per-node filter reasons and scores from the scheduler's own plugins
and config), judge (verdicts), runner (one run), report (table / JSON), cli (`python -m labkit.placement`).
The API calls go through labkit.kube.
"""
