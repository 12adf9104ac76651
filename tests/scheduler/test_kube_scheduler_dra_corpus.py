"""The scheduler against real kube-scheduler v1.36.2 decisions on pods with DRA ResourceClaims
(../shared/reference/kube-scheduler-v1.36.2-dra/cases/, whose README says how they were recorded): every probe
of every recorded state judged by the scheduler's own code with the probe's claims added to the claims'
store as the informer would: the same feasible set, the same weighted score per plugin and node,
kube-scheduler's node among our tied best, the same devices allocated to each claim on that node, the same
pods in its reservedFor and kube-scheduler's finalizer (what Reserve holds and PreBind writes), the same
FailedScheduling message, and the same error where
kube-scheduler failed the attempt with one (on a node of its choosing: it filters nodes in parallel, so the
error must be one ours gives on that node). Any difference fails the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler import KUBE_SCHEDULER_VERSION
from tests.kube_scheduler_corpus import (
    DRA_CORPUS_DIR,
    allocations_on,
    compare,
    compare_allocations,
    corpus_files,
    corpus_folder,
    errors_node_by_node,
    judge,
    load_state,
    probe_claims,
    read,
)

FILES = corpus_files("cases", DRA_CORPUS_DIR)


def _differences(path: Path) -> list[str]:
    doc = read(path)
    assert doc["kube_scheduler"].startswith(f"Kubernetes v{KUBE_SCHEDULER_VERSION}."), (path, doc["kube_scheduler"])
    state = load_state(doc)
    problems = []
    for probe in doc["probes"]:
        with probe_claims(state, probe):
            verdict = judge(state, probe["pod"])
            theirs = probe["kube_scheduler"].get("scheduler_error")
            if theirs is not None and verdict.error is not None and theirs != verdict.error \
                    and theirs in errors_node_by_node(state, probe["pod"]):
                verdict.error = theirs  # the same error on another node: which node fails first is chance
            mismatches = list(compare(doc, probe, verdict))
            bound_to = probe["kube_scheduler"]["bound_to"]
            if not mismatches and bound_to is not None:
                mismatches += compare_allocations(probe, allocations_on(state, probe["pod"], bound_to))
        problems += [str(m) for m in mismatches]
    return problems


@pytest.mark.parametrize("path", FILES or [None], ids=[p.stem for p in FILES] or None)
def test_dra_cases_decide_as_kube_scheduler(path: Path | None) -> None:
    corpus_folder("cases", DRA_CORPUS_DIR)
    assert path is not None
    problems = _differences(path)
    assert not problems, f"{path.name}: {len(problems)} difference(s) from kube-scheduler v1.36.2:\n  " + \
        "\n  ".join(problems)
