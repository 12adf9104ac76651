"""Terminal output shared by the verbs: one rich console, step headings, and streamed tool output."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.markup import escape

Echo = Callable[[str], None]  # where a step's progress lines go (a console, a list in tests)
console = Console(highlight=False)
errors = Console(stderr=True, highlight=False)


def step(title: str) -> None:
    console.print(f"[bold cyan]==>[/] [bold]{escape(title)}[/]")


def tool_line(line: str) -> None:
    """A line of a long-running tool's output (vagrant, pyinfra), shown dimmed under the current step."""
    if line.strip():
        console.print(f"    [dim]{escape(line)}[/]")


def fail(message: str) -> None:
    errors.print(f"[bold red]error:[/] {escape(message)}")


def warn(message: str) -> None:
    errors.print(f"[bold yellow]warning:[/] {escape(message)}", soft_wrap=True)
