"""``python -m scheduler.testing check SOURCE [SOURCE ...]``: the contract checks on the plugins each SOURCE
declares (a module name, a .py file or a package folder). Exit 0 when all pass; 1 naming each plugin and
rule broken; 2 when a source cannot be loaded (the message says why)."""

from __future__ import annotations

import argparse
import sys

from scheduler.framework import PluginError, Registry, load_registry
from scheduler.testing.contract import RULES, check_plugin


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scheduler.testing", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help=f"run the contract checks ({', '.join(RULES)}) on plugins")
    check.add_argument("sources", nargs="+", metavar="SOURCE",
                       help="a plugin module name, .py file or package folder declaring PLUGINS")
    check.add_argument("--seeds", type=int, default=10,
                       help="rounds of generated nodes and pods for the batch forms (default 10)")
    options = parser.parse_args(argv)
    try:
        # Only the sources' plugins: the in-tree ones are checked by kubelab's own tests.
        registry = load_registry(options.sources, base=Registry(), entry_points=False)
    except PluginError as err:
        print(f"cannot load: {err}", file=sys.stderr)
        return 2
    failed = 0
    for name, plugin in registry.items():
        problems = check_plugin(plugin, seeds=range(options.seeds))
        if problems:
            failed += 1
            for problem in problems:
                print(f"FAIL {problem}")
        else:
            print(f"ok   {name} ({registry.source_of(name)})")
    print(f"{len(registry) - failed} of {len(registry)} plugin(s) pass" if registry else "no plugins declared")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
