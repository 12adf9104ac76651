"""`test-placement`: prove where the bundled scheduler puts pods, and explain every miss.

Modules: scenarios (scenarios.yaml as data), kube (JSON API calls), changes (what a run changes and its
undo), explain (per-node filter reasons and scores from the scheduler's own plugins and config), judge
(verdicts), runner (one run), report (table / JSON), cli (`python -m labkit.placement`).
"""
