"""The docs cannot rot: every relative link and anchor in README.md, CHANGELOG.md and docs/ resolves, every verb
has its section in the verbs page, and every output block (tests/docs/markdown.py) is what its command prints
today. With KUBELAB_DOCS_WRITE=1 (scripts/capture-docs) the output blocks are rewritten instead of compared."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest
from invoke import Collection

import tasks
from labkit.paths import PROJECT_ROOT
from tests.docs.markdown import anchors, links, output_blocks

WRITE = os.environ.get("KUBELAB_DOCS_WRITE") == "1"
PAGES = sorted({PROJECT_ROOT / "README.md", PROJECT_ROOT / "CHANGELOG.md",
                *PROJECT_ROOT.glob("docs/**/*.md"), *PROJECT_ROOT.glob("examples/**/*.md"),
                *PROJECT_ROOT.glob("plugins/**/*.md")})
# What a command in an output block sees: a fixed width and no colour, so its output is the same everywhere.
COMMAND_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("KUBELAB_", "KUBECONFIG", "CI"))} | {
    "COLUMNS": "110", "NO_COLOR": "1", "TERM": "dumb", "PYTHONHASHSEED": "0"}


def _rel(path: Path) -> str:
    return str(path.relative_to(PROJECT_ROOT))


def test_the_docs_exist():
    assert (PROJECT_ROOT / "docs").is_dir() and len(PAGES) > 10, PAGES


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_every_relative_link_and_anchor_resolves(page: Path):
    text = page.read_text()
    broken = []
    for line, target in links(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        destination = (page.parent / unquote(file_part)).resolve() if file_part else page
        if not destination.exists():
            broken.append(f"{_rel(page)}:{line}: {target}: no such file")
            continue
        if anchor and destination.suffix == ".md" and anchor not in anchors(destination.read_text()):
            broken.append(f"{_rel(page)}:{line}: {target}: no heading gives #{anchor} in {_rel(destination)}")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_every_verb_has_a_section_in_the_verbs_page():
    verbs_page = (PROJECT_ROOT / "docs" / "user-guide" / "verbs.md").read_text()
    documented = {m.group(1) for m in re.finditer(r"^#{2,4} `([a-z-]+)", verbs_page, re.MULTILINE)}
    documented |= {m.group(1) for m in re.finditer(r"^#{2,4} `[a-z-]+`, `([a-z-]+)`", verbs_page, re.MULTILINE)}
    verbs = set(Collection.from_module(tasks).task_names)
    assert verbs <= documented, f"verbs without a section in docs/user-guide/verbs.md: {sorted(verbs - documented)}"


BLOCKS = [block for page in PAGES for block in output_blocks(page)]


@pytest.fixture(scope="session")
def lab_set_up() -> None:
    """`./lab` sets up .venv first when pyproject.toml changed since (printing that it does): done here once, so
    an output block shows only what its command prints."""
    subprocess.run([str(PROJECT_ROOT / "lab"), "--version"], cwd=PROJECT_ROOT, capture_output=True, check=True,
                   timeout=600, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: f"{_rel(b.path)}:{b.line}")
def test_output_blocks_are_what_the_command_prints(block, tmp_path, lab_set_up):
    result = subprocess.run(["bash", "-c", block.command], cwd=PROJECT_ROOT, env=COMMAND_ENV | {"TMPDIR": str(tmp_path)},
                            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
    printed = _normalised(result.stdout + result.stderr)
    assert result.returncode == block.exit_code, (
        f"{_rel(block.path)}:{block.line}: `{block.command}` exited {result.returncode}, the docs say "
        f"{block.exit_code}:\n{printed}")
    if WRITE:
        _rewrite(block, printed)
        return
    assert printed == _normalised(block.body), (
        f"{_rel(block.path)}:{block.line}: `{block.command}` prints something else now; "
        "re-capture with scripts/capture-docs")


def _normalised(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines()) + "\n"


def _rewrite(block, printed: str) -> None:
    text = block.path.read_text()
    current = next(b for b in output_blocks(block.path) if b.line == block.line)  # offsets after earlier rewrites
    block.path.write_text(text[:current.start] + printed + text[current.end:])


def test_a_broken_link_is_found(tmp_path):
    """The checker itself: a link to a missing page and to a missing anchor are both reported."""
    page = tmp_path / "page.md"
    page.write_text("# Title\n\nSee [gone](missing.md), [bad](#nowhere), [good](#title) and `[code](x.md)`.\n")
    found = links(page.read_text())
    assert [t for _, t in found] == ["missing.md", "#nowhere", "#title"]
    assert "title" in anchors(page.read_text()) and "nowhere" not in anchors(page.read_text())
