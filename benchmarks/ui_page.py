"""The placement page (`./lab ui`) at scale: how long it takes to load, and that it stays live.

The API test server (in this process) holds NODES nodes and PODS pods (most bound, spread evenly; a tenth
pending); `./lab ui` serves them from a process of its own (the invoke verb, as a user runs it); Debian's
headless Chromium opens the page through selenium and Debian's chromedriver.

- load: from navigation start to the first snapshot drawn (every node's cell in the overview grid, the pending
  pods grouped by reason), read from the page itself (document.body.dataset.drawnAt, performance.now()); the
  median of --loads fresh loads;
- live: after loading, --bindings pods are bound one at a time (the spec.nodeName change a binding makes, so
  the watch sends the same MODIFIED event), each to the node selected in the grid, and the time until the pod
  is in the node's details is taken by polling the page every 10 ms: median and maximum;
- explain: --explains bound pods selected one after another, each timed from the click to its explain table on
  screen (`./lab explain`'s computation over the whole cluster, in the ui server): median and maximum.

    .venv/bin/python -m benchmarks.ui_page --nodes 500 --pods 5000

A benchmark, not a test: figures depend on the machine; docs/contributing/benchmarks.md gives the current ones.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kubeapi_testserver.fixtures import running_server
from labkit.paths import PROJECT_ROOT

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def _browser() -> Any:  # selenium is a dev extra: imported only here
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,800"):
        options.add_argument(arg)
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))


def _until(driver: Any, script: str, timeout: float, poll: float = 0.01) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = driver.execute_script(f"return {script};")
        if value:
            return value
        time.sleep(poll)
    raise RuntimeError(f"the page never satisfied {script} within {timeout} s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ui_page", description=__doc__.split("\n")[0])
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--pods", type=int, default=5000)
    p.add_argument("--loads", type=int, default=3, help="fresh page loads to time (median reported)")
    p.add_argument("--bindings", type=int, default=20, help="bindings to time after loading")
    p.add_argument("--explains", type=int, default=3, help="pods to select and time until explained")
    args = p.parse_args(argv)

    with running_server() as server, tempfile.TemporaryDirectory(prefix="kubelab-ui-bench-") as tmp:
        kubeconfig = server.write_kubeconfig(Path(tmp) / "kubeconfig")
        names = [n["metadata"]["name"] for n in server.add_nodes(args.nodes, cpu="32", memory="128Gi")]
        pending = args.pods // 10
        for i in range(args.pods):
            server.add_pod(f"pod-{i}", cpu="100m", memory="128Mi",
                           node_name=None if i < pending else names[i % len(names)])
        ui = subprocess.Popen([sys.executable, "-m", "invoke", "ui", "--lab", str(PROJECT_ROOT / "lab.yaml"),
                               "--kubeconfig", str(kubeconfig), "--port", "0", "--no-browser"],
                              cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        driver = None
        try:
            assert ui.stdout is not None
            line = ui.stdout.readline()
            found = re.search(r"http://127\.0\.0\.1:\d+/", line)
            if not found:
                raise RuntimeError(f"./lab ui printed no URL: {line}")
            url = found.group(0)
            driver = _browser()
            loads = []
            for _ in range(args.loads):
                driver.get(url)
                loads.append(float(_until(driver, "document.body.dataset.drawnAt", 120)) / 1000)
                cells = driver.execute_script("return document.querySelectorAll('#grid .kv-cell').length;")
                grouped = driver.execute_script("return document.querySelectorAll('#pending button.pod').length;")
                if (cells, grouped) != (args.nodes, pending):
                    raise RuntimeError(f"the page shows {cells} nodes and {grouped} pending pods, not "
                                       f"{args.nodes} and {pending}")
            latencies = []
            for i in range(args.bindings):
                name, node = f"pod-{i}", names[(i * 7) % len(names)]
                _until(driver, f"document.querySelector('#grid [data-cell=\"{node}\"]')", 30).click()
                _until(driver, f"document.getElementById('node-detail').dataset.node === '{node}'", 30)
                server.update_pod(name, {"spec": {"nodeName": node}})
                bound = time.monotonic()
                _until(driver, f"document.querySelector('#node-detail button[data-pod=\"default/{name}\"]')", 30)
                latencies.append(time.monotonic() - bound)
            explains = []
            for i in range(args.explains):
                key, node = f"default/pod-{args.pods - 1 - i}", names[(args.pods - 1 - i) % len(names)]
                _until(driver, f"document.querySelector('#grid [data-cell=\"{node}\"]')", 30).click()
                button = _until(driver, f"document.querySelector('button[data-pod=\"{key}\"]')", 30)
                clicked = time.monotonic()
                button.click()
                _until(driver, f"document.getElementById('explain').dataset.pod === '{key}'", 120)
                explains.append(time.monotonic() - clicked)
        finally:
            if driver is not None:
                driver.quit()
            ui.terminate()
            ui.wait(10)
    print(f"placement page, {args.nodes} nodes, {args.pods} pods ({pending} pending):")
    print(f"  load (navigation start to the grid and pending groups drawn): median {statistics.median(loads):.2f} s "
          f"over {len(loads)} loads ({', '.join(f'{s:.2f}' for s in loads)})")
    print(f"  live (binding to the pod in its node's details): median {statistics.median(latencies) * 1000:.0f} ms,"
          f" max {max(latencies) * 1000:.0f} ms over {len(latencies)} bindings")
    print(f"  explain (click to the table on screen): median {statistics.median(explains):.2f} s, "
          f"max {max(explains):.2f} s over {len(explains)} pods")
    return 0


if __name__ == "__main__":
    sys.exit(main())
