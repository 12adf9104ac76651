"""DRA CEL device selectors (scheduler/dra/cel.py): what compiling a selector and evaluating it on a device
cost, at the allocator's scale (every device of every candidate node, for each pod's requests).

    .venv/bin/python -m benchmarks.dra_cel --nodes 500 --devices 8 --pods 20

Prints JSON: microseconds per compile (uncached: a new expression), per cached compile_selector call, per
device_view, per matches() by selector kind (the first evaluation of a selector on a device, and a repeat,
which the view answers from its results), and the time one pod's filter pass spends in selectors (class
selector + request selector on every device: the first pod, and the next ones). A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import time

from scheduler.dra import cel

SELECTORS = {
    "driver": 'device.driver == "gpu.example.com"',
    "bool attribute": 'device.attributes["gpu.example.com"].ecc',
    "int attribute": 'device.attributes["gpu.example.com"].numa == 0',
    "string in list": 'device.attributes["gpu.example.com"].model in ["a100", "h100"]',
    "quantity compareTo": 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0',
    "missing domain, has()": 'has(device.attributes["nic.example.com"].model)',
    "cel.bind, two lookups": ('cel.bind(g, device.attributes["gpu.example.com"], g.model == "a100" && '
                              'g.numa == 1)'),
}
MODELS = ("t4", "l4", "a100", "h100")


def make_device(i: int) -> dict:
    return {
        "name": f"gpu-{i}",
        "attributes": {
            "model": {"string": MODELS[i % len(MODELS)]},
            "numa": {"int": i % 2},
            "ecc": {"bool": i % 3 == 0},
            "example.com/socket": {"int": i % 2},
            "example.com/shared": {"bool": False},
        },
        "capacity": {"memory": {"value": f"{16 * (1 + i % 5)}Gi"}},
    }


def per_call_us(fn, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat * 1e6


def run(nodes: int, devices: int, pods: int) -> dict:
    field = "spec.selectors[0].cel.expression"
    counter = iter(range(10**9))
    uncached = per_call_us(
        lambda: cel.compile_selector(f'device.attributes["gpu.example.com"].numa == {next(counter)}', field), 500)
    cached = per_call_us(lambda: cel.compile_selector(SELECTORS["int attribute"], field), 20000)
    raw = [make_device(i) for i in range(nodes * devices)]
    start = time.perf_counter()
    views = [cel.device_view("gpu.example.com", d) for d in raw]
    view_us = (time.perf_counter() - start) / len(views) * 1e6

    first, repeat = {}, {}
    for kind, expression in SELECTORS.items():
        selector = cel.compile_selector(expression, field)
        for out in (first, repeat):
            start = time.perf_counter()
            for view in views:
                selector.matches(view)
            out[kind] = round((time.perf_counter() - start) / len(views) * 1e6, 2)

    views = [cel.device_view("gpu.example.com", d) for d in raw]  # fresh: nothing evaluated yet
    klass = cel.compile_selector(SELECTORS["driver"], field)
    request = cel.compile_selector(SELECTORS["quantity compareTo"], field)
    passes = []
    for _ in range(pods):
        start = time.perf_counter()
        for view in views:
            if klass.matches(view):
                request.matches(view)
        passes.append(time.perf_counter() - start)
    return {
        "nodes": nodes,
        "devices_per_node": devices,
        "compile_new_expression_us": round(uncached, 1),
        "compile_selector_cached_us": round(cached, 2),
        "device_view_us": round(view_us, 1),
        "matches_first_us": first,
        "matches_repeat_us": repeat,
        "first_pod_selectors_on_every_device_ms": round(passes[0] * 1e3, 1),
        "next_pods_selectors_on_every_device_ms": round(sum(passes[1:]) / max(1, len(passes) - 1) * 1e3, 2),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--devices", type=int, default=8, help="devices per node")
    parser.add_argument("--pods", type=int, default=20, help="filter passes to average over")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.nodes, args.devices, args.pods), indent=2))


if __name__ == "__main__":
    main()
