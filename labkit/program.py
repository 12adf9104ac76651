"""The `./lab` program: invoke's task runner with kubelab's own help screen and bash completion.

    python -m labkit.program VERB [options]     (what ./lab runs, from the project folder holding tasks.py)

`./lab` and `./lab --help` list the verbs with one line each, the common flags and examples, as kind does;
invoke's own core options move behind `--invoke-help`. `./lab --list` and `./lab VERB --help` are invoke's.
"""

from __future__ import annotations

import os
import sys

from invoke import Argument, Exit, ParseError, Program
from invoke.util import helpline

# The verbs in the order a user meets them; a verb missing here is listed under "Other verbs".
VERB_GROUPS: dict[str, tuple[str, ...]] = {
    "The lab": ("up", "status", "down", "rebuild", "snapshot", "restore", "doctor"),
    "The scheduler": ("deploy-scheduler", "test-placement", "explain", "simulate", "ui", "logs", "benchmark"),
    "Reaching the cluster": ("kubectl", "ssh", "kubeconfig"),
    "The project": ("test",),
}

# Columns of the help screen: a verb (or flag), then its one line; the lines fit 80 columns (tests/lab/test_help.py).
NAME_WIDTH = 22

COMMON_FLAGS = (
    ("--lab FILE", "lab definition file (default: lab.yaml, or $KUBELAB_FILE)"),
    ("-h, --help [VERB]", "this screen, or one verb's options: ./lab VERB --help"),
    ("--list", "the verbs with their help lines, as invoke lists them"),
    ("--version", "kubelab's version and the versions the lab pins"),
    ("--print-completion-script bash", "tab completion of verbs and options (below)"),
    ("--invoke-help", "invoke's own options (--echo, --dry, --debug, ...)"),
)

EXAMPLES = (
    ("./lab up && ./lab deploy-scheduler && ./lab test-placement",
     "a cluster, the scheduler in it, placements proved"),
    ("./lab explain web-1 --lab my-lab.yaml", "why pod web-1 goes where it goes"),
)

# Enables completion in the current bash; put it in ~/.bashrc (from the project folder: its absolute path).
COMPLETION_LINE = "source <(./lab --print-completion-script bash)"

# bash glue around invoke's `--complete`: run the ./lab the user typed (relative, absolute or ~/...), hand it
# the words so far with the program's own word as `lab` (invoke strips that name), filter by the current word.
# `-o default`: file names when there is no candidate (after --lab, say).
BASH_COMPLETION = """\
# kubelab: tab completion of ./lab's verbs and options (invoke's --complete). Enable: {line}
_kubelab_complete() {{
    local lab="${{COMP_WORDS[0]/#\\~/$HOME}}" candidates
    candidates=$("$lab" --complete -- lab "${{COMP_WORDS[@]:1:COMP_CWORD}}" 2>/dev/null)
    COMPREPLY=( $(compgen -W "$candidates" -- "${{COMP_WORDS[COMP_CWORD]}}") )
}}
complete -F _kubelab_complete -o default lab
"""


class LabProgram(Program):
    """invoke's Program in task-runner mode (tasks.py from the current folder), with our help and completion."""

    def __init__(self) -> None:
        # binary: how help texts name the program; binary_names: the word --complete strips (see BASH_COMPLETION)
        super().__init__(name="kubelab", binary="./lab", binary_names=["lab"])

    def core_args(self) -> list[Argument]:
        return [*super().core_args(),
                Argument(names=("invoke-help",), kind=bool, default=False, help="Show invoke's core options.")]

    def parse_core_args(self) -> None:
        super().parse_core_args()
        shell = self.args["print-completion-script"].value
        if shell:
            if shell != "bash":
                raise ParseError(f"--print-completion-script {shell}: ./lab completes in bash only "
                                 f"(`{COMPLETION_LINE}`)")
            print(BASH_COMPLETION.format(line=COMPLETION_LINE), end="")
            raise Exit
        if self.args["invoke-help"].value:
            print("invoke's core options (before the verb: ./lab --echo up):\n")
            self.print_columns(self.initial_context.help_tuples())
            raise Exit

    def print_help(self) -> None:
        """`./lab`, `./lab --help`: verbs with one line each, common flags, examples."""
        if getattr(self, "collection", None) is None:  # bare --help comes before tasks.py is loaded
            self.load_collection()
        print(help_screen({name: helpline(task) or "" for name, task in self.collection.tasks.items()}))


def help_screen(verbs: dict[str, str]) -> str:
    """The help screen for these verbs (name: one-line help), grouped as VERB_GROUPS orders them."""
    lines = ["kubelab: Kubernetes scheduler labs on local VMs: a kubeadm cluster, a Python",
             "scheduler you can read and change, and tests that prove where it places pods.", "",
             "Usage:", "  ./lab VERB [options]", ""]
    grouped = {name for names in VERB_GROUPS.values() for name in names}
    groups = dict(VERB_GROUPS, **{"Other verbs": tuple(sorted(set(verbs) - grouped))})
    for group, names in groups.items():
        rows = [_row(name, verbs[name]) for name in names if name in verbs]
        if rows:
            lines += [f"{group}:", *rows, ""]
    lines.append("Common flags:")
    lines += [_row(flag, text) for flag, text in COMMON_FLAGS]
    lines += ["", "Examples:"]
    for command, text in EXAMPLES:
        lines += [f"  {command}", f"      {text}"]
    lines += ["", 'Use "./lab VERB --help" for a verb\'s options and an example.',
              f"Tab completion in bash: {COMPLETION_LINE}"]
    return "\n".join(lines)


def _row(name: str, text: str) -> str:
    if len(name) + 2 >= NAME_WIDTH:  # a long flag takes its own line
        return f"  {name}\n{' ' * NAME_WIDTH}{text}"
    return f"  {name:<{NAME_WIDTH - 2}}{text}"


def main() -> None:
    try:
        LabProgram().run(sys.argv)
    except BrokenPipeError:  # `./lab --list | head`: the reader left; no traceback, and none again at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


if __name__ == "__main__":
    main()
