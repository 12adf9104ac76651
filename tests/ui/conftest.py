"""Fixtures for the placement page's tests: the lab-shaped cluster on the API test server with the real
scheduler process (tests/placement), `./lab ui` itself as a subprocess, and a real headless Chromium from
Debian's packages driven through the Debian chromedriver."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kubeapi_testserver.fixtures import kube_api, kube_api_kubeconfig  # noqa: F401
from labkit.paths import PROJECT_ROOT
from tests.placement.conftest import Cluster, cluster, deployed  # noqa: F401
from tests.placement.gang import gang_cluster  # noqa: F401
from tests.unavailable import skip_or_fail

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
DOCS_IMAGES = PROJECT_ROOT / "docs" / "images"


@contextmanager
def lab_ui(lab_file: Path, kubeconfig: Path) -> Iterator[str]:
    """`./lab ui --port 0 --no-browser` (the invoke verb) serving the cluster; its URL as it prints it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "invoke", "ui", "--lab", str(lab_file), "--kubeconfig", str(kubeconfig),
         "--port", "0", "--no-browser"], cwd=PROJECT_ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    first = proc.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:\d+/", first)
    try:
        if not found:
            proc.kill()
            pytest.fail(f"./lab ui printed no URL: {first}{proc.stdout.read()}")
        yield found.group(0)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def ui_url(cluster: Cluster) -> Iterator[str]:  # noqa: F811
    with lab_ui(cluster.lab_file, cluster.kubeconfig) as url:
        yield url


def wait_for_page(driver: Any, script: str, timeout: float = 10.0, poll: float = 0.02) -> Any:
    """Poll a JavaScript expression until it is truthy; its value."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = driver.execute_script(f"return {script};")
        if value:
            return value
        time.sleep(poll)
    pytest.fail(f"the page never satisfied: {script}")


@pytest.fixture
def browser() -> Iterator[object]:
    """Headless Chromium (Debian's `chromium`, `chromium-driver`), through selenium."""
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        skip_or_fail(f"no {CHROMIUM} or {CHROMEDRIVER}: apt-get install chromium chromium-driver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        skip_or_fail("selenium is not installed: pip install -e '.[dev]'")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,760"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    """Where the tests' screenshots go: docs/images/ with KUBELAB_DOCS_WRITE=1 (the docs show them), else
    the test's own folder."""
    if os.environ.get("KUBELAB_DOCS_WRITE") == "1":
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        return DOCS_IMAGES
    return tmp_path
