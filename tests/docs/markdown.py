"""Reading the project's Markdown the way GitHub renders it: relative links, heading anchors, and the output
blocks the docs tests re-run.

An output block is a fenced block right after an HTML comment naming the command that printed it:

    <!-- output: ./lab --help -->
    ```text
    ...what the command printed...
    ```

`<!-- output: CMD (exit N) -->` says the command exits N (default 0). Output that is Markdown itself (a generated
table) goes between the marker and `<!-- end output -->` instead of in a fenced block, so it renders. The docs tests run each command and compare;
`KUBELAB_DOCS_WRITE=1 .venv/bin/pytest tests/docs` (scripts/capture-docs) writes what the commands print now into
the blocks instead, so no output in the docs is ever copied by hand.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(r"^(```|~~~)")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"`+[^`]*`+")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
OUTPUT_MARK = re.compile(r"^<!-- output: (?P<command>.+?)(?: \(exit (?P<exit>\d+)\))? -->$")
END_MARK = "<!-- end output -->"


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, inline code removed: where links and headings live."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, INLINE_CODE.sub("", line)))
    return lines


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every Markdown link and image outside code."""
    return [(number, match.group(1)) for number, line in prose_lines(text) for match in LINK.finditer(line)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading anchors by its text
    text = text.strip().lower()
    kept = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor the file's headings give, GitHub's -1, -2 suffixes for repeated headings included."""
    seen: dict[str, int] = {}
    result = set()
    for _, line in prose_lines(text):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2).replace("`", ""))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


@dataclass
class OutputBlock:
    path: Path
    line: int  # the marker's line number
    command: str
    exit_code: int
    body: str  # the fenced block's content, without its fences
    start: int  # offsets of the body in the file's text, for rewriting
    end: int


def output_blocks(path: Path) -> list[OutputBlock]:
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    blocks = []
    for i, line in enumerate(lines):
        match = OUTPUT_MARK.match(line.strip())
        if not match:
            continue
        fenced = i + 1 < len(lines) and FENCE.match(lines[i + 1]) is not None
        first = i + 2 if fenced else i + 1
        j = first
        while j < len(lines) and not (FENCE.match(lines[j]) if fenced else lines[j].strip() == END_MARK):
            j += 1
        if j == len(lines):
            closing = "its closing fence" if fenced else END_MARK
            raise ValueError(f"{path}:{i + 1}: the output block has no {closing}")
        blocks.append(OutputBlock(path, i + 1, match.group("command"), int(match.group("exit") or 0),
                                  text[starts[first]:starts[j]], starts[first], starts[j]))
    return blocks
