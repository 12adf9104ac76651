"""`test-placement`: prove where the bundled scheduler puts pods, and explain every miss; `explain`: why one
pod goes where it goes.

Modules: scenarios (scenarios.yaml as data), session (one run's namespace, test pods, waits and node label),
probe (is the scheduler there, and if not, why), checks (one check per kind of expectation), changes (what
a run changes and its undo), explain (per-node filter reasons and scores from the scheduler's own plugins,
config and cache), explain_view (the explanation table), explain_verb (`./lab explain`), judge (verdicts),
runner (one run), report (table / JSON), cli (`python -m labkit.placement`).
The API calls go through labkit.kube.
"""
