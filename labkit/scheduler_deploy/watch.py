"""`./lab deploy-scheduler --watch`: deploy again on every saved change under scheduler/ or one of the lab's
plugin folders (scheduler.plugins), so a user's plugin has the same inner loop as ours.

watchfiles reports a burst of saves as one change set once the files have been quiet for QUIET_MS (and at
the latest after DEBOUNCE_MS); editors' swap and backup files and __pycache__ are ignored. A failed round
(a syntax error the build trips on, a node that refuses the import) is reported and the loop waits for the
next save; Ctrl-C ends it between or during rounds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import watchfiles

from labdef.errors import UserError
from labkit.console import Echo
from labkit.image import SCHEDULER_DIR

QUIET_MS = 300
DEBOUNCE_MS = 1600


def changed_files(changes: Iterable[tuple[watchfiles.Change, str]], roots: Sequence[Path]) -> str:
    """The changed files, each under the folder name of the root it is in (scheduler/x.py, my_plugin/y.py)."""
    def shown(path: Path) -> str:
        root = next((r for r in roots if path.is_relative_to(r)), path.parent)
        return (Path(root.name) / path.relative_to(root)).as_posix()

    names = sorted({shown(Path(path)) for _, path in changes})
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def watch_and_deploy(deploy: Callable[[], object], echo: Echo, roots: Sequence[Path] = (SCHEDULER_DIR,),
                     stop: threading.Event | None = None) -> None:
    """Run `deploy` now and after every change under the `roots`, until Ctrl-C (or `stop` is set)."""
    def attempt() -> None:
        try:
            deploy()
        except UserError as err:
            echo(f"deploy failed: {err}")
        echo(f"watching {', '.join(str(r) for r in roots)} for changes (Ctrl-C ends it)")

    try:
        attempt()
        for changes in watchfiles.watch(*roots, step=QUIET_MS, debounce=DEBOUNCE_MS, stop_event=stop,
                                        raise_interrupt=False):
            echo(f"changed: {changed_files(changes, roots)}")
            attempt()
    except KeyboardInterrupt:  # during a round; between rounds watchfiles returns by itself
        pass
    echo("stopped watching")
