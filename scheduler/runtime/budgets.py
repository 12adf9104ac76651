"""The PodDisruptionBudgets (policy/v1) as the watch last showed them, for preemption to read
(kube-scheduler's PDB lister). Thread-safe: the PDB informer writes, the scheduling loop reads."""

from __future__ import annotations

import threading
from typing import Any

from scheduler.framework.preemption import PodDisruptionBudget
from scheduler.runtime.informer import object_key

PDB_PATH = "/apis/policy/v1/poddisruptionbudgets"


class DisruptionBudgets:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._budgets: dict[str, PodDisruptionBudget] = {}  # namespace/name -> budget
        self._list: tuple[PodDisruptionBudget, ...] = ()

    def changed(self, obj: dict[str, Any]) -> None:
        with self._lock:
            self._budgets[object_key(obj)] = PodDisruptionBudget.from_api(obj)
            self._list = tuple(self._budgets.values())

    def deleted(self, obj: dict[str, Any]) -> None:
        with self._lock:
            if self._budgets.pop(object_key(obj), None) is not None:
                self._list = tuple(self._budgets.values())

    def all(self) -> tuple[PodDisruptionBudget, ...]:
        with self._lock:
            return self._list
