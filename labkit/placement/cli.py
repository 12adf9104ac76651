"""The test-placement command line, shared by `./lab test-placement` (tasks.py) and
`python -m labkit.placement` (which the API tests run as a user would).

Exit status: 0 every scenario passed (or was skipped), 1 a scenario missed, 2 the run could not start
(lab definition, kubeconfig, scenarios file, scheduler config, API errors), 3 the scheduler is not running,
130 interrupted (after cleaning up).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from labdef.errors import UserError
from labdef.lab import DEFAULT_LAB_FILE, Lab, load_lab
from labkit.paths import LabPaths
from labkit.placement.html_report import write_html
from labkit.placement.options import HELP, PlacementOptions
from labkit.placement.report import as_json, print_report, to_json
from labkit.placement.runner import EXIT_ERROR, run

EXIT_INTERRUPTED = 130
WIDE = 180


def _width() -> int | None:
    """Terminals report their width; logs and pipes get wide lines rather than a table folded to 80."""
    return None if sys.stdout.isatty() or os.environ.get("COLUMNS") else WIDE


def output_console() -> Console:
    """Where a report goes: stdout, as wide as the terminal, or wide lines in logs and pipes."""
    return Console(highlight=False, width=_width())


def default_kubeconfig(lab: Lab) -> Path:
    return LabPaths.for_lab(lab.name).kubeconfig


def execute(lab: Lab, options: PlacementOptions, *, json_output: bool = False, out: Console | None = None,
            err: Console | None = None, html: Path | None = None) -> int:
    """Run, print the report (table or JSON), write it as HTML to `html` if given; the exit status."""
    out = out or output_console()
    err = err or Console(stderr=True, highlight=False, width=_width())

    def echo(line: str) -> None:  # progress goes to stderr, so stdout holds only the report (or JSON)
        err.print(f"[bold cyan]==>[/] {escape(line)}")

    try:
        report = run(lab, options, echo)
    except UserError as problem:
        err.print(f"[bold red]error:[/] {escape(str(problem))}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]: stopped after undoing the run's changes (cleanup lines above)")
        return EXIT_INTERRUPTED
    if json_output:
        print(to_json(report), file=out.file)
    else:
        print_report(out, report)
    if html is not None:  # after the report: a file that cannot be written loses none of it
        try:
            write_html(as_json(report), html)
        except UserError as problem:
            err.print(f"[bold red]error:[/] {escape(str(problem))}")
            return EXIT_ERROR
        echo(f"report written to {html}")
    return report.exit_code


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m labkit.placement", description=__doc__.split("\n")[0])
    p.add_argument("--lab", type=Path, default=None, help="lab definition (default: lab.yaml)")
    p.add_argument("--kubeconfig", type=Path, help=HELP["kubeconfig"])
    p.add_argument("--context", help=HELP["context"])
    p.add_argument("--json", action="store_true", help=HELP["json"])
    p.add_argument("--html", type=Path, metavar="FILE", help=HELP["html"])
    p.add_argument("--keep", action="store_true", help=HELP["keep"])
    p.add_argument("--wait-running", action="store_true", help=HELP["wait-running"])
    p.add_argument("--include-restart", action="store_true", help=HELP["include-restart"])
    p.add_argument("--timeout", type=float, default=PlacementOptions.timeout, help=HELP["timeout"])
    p.add_argument("--probe-seconds", type=float, default=PlacementOptions.probe_seconds,
                   help=f"how long to wait for a sign of the scheduler (default: {PlacementOptions.probe_seconds:.0f})")
    p.add_argument("--scheduler-config", type=Path, help=HELP["scheduler-config"])
    p.add_argument("--scenarios", type=Path, action="append", help=HELP["scenarios"])
    p.add_argument("--only", action="append", help=HELP["only"])
    return p


def options_from(args: argparse.Namespace, lab: Lab) -> PlacementOptions:
    options = PlacementOptions(
        kubeconfig=args.kubeconfig or default_kubeconfig(lab), context=args.context, keep=args.keep,
        wait_running=args.wait_running, include_restart=args.include_restart, timeout=args.timeout,
        probe_seconds=args.probe_seconds, scheduler_config=args.scheduler_config, only=args.only,
        scenarios_files=args.scenarios)
    return options


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        lab = load_lab(args.lab or DEFAULT_LAB_FILE)
    except UserError as problem:
        Console(stderr=True).print(f"[bold red]error:[/] {problem}", highlight=False)
        return EXIT_ERROR
    return execute(lab, options_from(args, lab), json_output=args.json, html=args.html)


if __name__ == "__main__":
    sys.exit(main())
