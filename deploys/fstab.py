"""Swap must stay off after a reboot: comment out every active swap entry in /etc/fstab."""

from __future__ import annotations


def is_swap_entry(line: str) -> bool:
    fields = line.split()
    return len(fields) >= 3 and not fields[0].startswith("#") and fields[2] == "swap"


def without_swap(lines: list[str]) -> list[str]:
    return [f"#{line}" if is_swap_entry(line) else line for line in lines]
