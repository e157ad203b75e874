"""The fenced code blocks of a Markdown page, each with what its ``readme-test`` markers say.

``tests/test_readme.py`` runs every ``python`` and ``bash`` block of the README and of
``docs/*.md``. A block that cannot run as written in CI says so in HTML comments (invisible on
the rendered page) on the lines right before its fence:

- ``<!-- readme-test: skip REASON -->``: not run; the test is reported as skipped with REASON.
- ``<!-- readme-test: replace {"OLD": "NEW", ...} -->``: run with each OLD replaced by NEW
  (a JSON object; every OLD must occur in the block, so a stale marker fails). Used to run a
  training block at a tiny size (``"smollm2-135m"`` -> ``"tiny-random-qwen3"``, fewer steps).
- ``<!-- readme-test: server COMMAND -->``: COMMAND (a shell line) runs in the background
  while the block runs, and is stopped after it; the block waits for its port.

``{port}`` in a ``server`` command or a ``replace`` value is a free local port chosen per run.

Example:
    >>> page = '''# T
    ... ## Use
    ... <!-- readme-test: replace {"steps=9": "steps=1"} -->
    ... ```python
    ... run(steps=9)
    ... ```
    ... '''
    >>> [block] = parse_blocks(page, "README.md")
    >>> block.test_id, block.language, block.runnable_code(port=0)
    ('README.md::use-1', 'python', 'run(steps=1)\\n')
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

RUNNABLE = {"python": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
"""Fence languages that are code to run, and how each is run."""
NOT_CODE = frozenset({"text"})
"""Fence languages that are prose laid out in a fixed font (never run)."""

_FENCE = re.compile(r"^(\s*)```\s*([\w+-]*)\s*$")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$")
_MARKER = re.compile(r"^<!--\s*readme-test:\s*(skip|replace|server)\b\s*(.*?)\s*-->\s*$")


def slug(heading: str) -> str:
    """A heading as a short test-id part: lower case, words joined by ``-``.

    >>> slug("Using the envs from other libraries")
    'using-the-envs-from-other-libraries'
    """
    return "-".join(re.findall(r"[a-z0-9]+", heading.lower())) or "top"


@dataclass(frozen=True)
class Block:
    """One fenced code block and its markers.

    Attributes:
        page: The page's name in the test id (``README.md``, ``docs/scaling.md``).
        line: The fence's line number (1-based).
        heading: The heading the block sits under (``""`` before the first).
        index: The block's number under that heading, from 1.
        language: The fence's language (``""`` if none).
        code: The block's text.
        skip: The ``skip`` marker's reason, or None.
        replacements: The ``replace`` marker's pairs, in order.
        server: The ``server`` marker's command, or None.
    """

    page: str
    line: int
    heading: str
    index: int
    language: str
    code: str
    skip: str | None = None
    replacements: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    server: str | None = None

    @property
    def test_id(self) -> str:
        return f"{self.page}::{slug(self.heading)}-{self.index}"

    @property
    def runnable(self) -> bool:
        return self.language in RUNNABLE

    def runnable_code(self, port: int) -> str:
        """The code with the ``replace`` marker's pairs applied (``{port}`` filled in).

        Raises:
            ValueError: naming a replacement whose text is not in the block (a stale marker).
        """
        code = self.code
        for old, new in self.replacements:
            if old not in code:
                raise ValueError(f"{self.page}:{self.line}: readme-test replace: {old!r} is not in the block")
            code = code.replace(old, new.replace("{port}", str(port)))
        return code

    def server_command(self, port: int) -> str | None:
        return None if self.server is None else self.server.replace("{port}", str(port))


def parse_blocks(text: str, page: str) -> list[Block]:
    """Every fenced block of a Markdown page, in order, with the markers right before it.

    Raises:
        ValueError: for an unknown or malformed marker, a marker not followed by a fence, or an
            unclosed fence (each naming the page and line).
    """
    blocks: list[Block] = []
    lines = text.splitlines()
    heading, counts = "", {}
    pending: dict[str, object] = {}
    pending_line = 0
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        marker = _MARKER.match(line.strip())
        fence = _FENCE.match(line)
        if line.strip().startswith("<!--") and "readme-test" in line and marker is None:
            raise ValueError(f"{page}:{number}: malformed readme-test marker {line.strip()!r}")
        if marker is not None:
            kind, body = marker.groups()
            pending_line = number
            if kind == "replace":
                try:
                    pairs = json.loads(body)
                except json.JSONDecodeError as error:
                    raise ValueError(f"{page}:{number}: readme-test replace needs a JSON object: {error}") from None
                if not isinstance(pairs, dict) or not all(isinstance(v, str) for v in pairs.values()):
                    raise ValueError(f"{page}:{number}: readme-test replace needs a JSON object of strings")
                pending["replacements"] = tuple(pairs.items())
            elif not body:
                raise ValueError(f"{page}:{number}: readme-test {kind} needs a reason or command")
            else:
                pending[kind] = body
            continue
        if fence is None:
            if pending and line.strip():
                raise ValueError(f"{page}:{pending_line}: a readme-test marker must come right before a fence")
            heading_match = _HEADING.match(line)
            if heading_match is not None:
                heading = heading_match.group(1)
            continue
        start = number
        body_lines: list[str] = []
        while number < len(lines) and not lines[number].strip().startswith("```"):
            body_lines.append(lines[number])
            number += 1
        if number == len(lines):
            raise ValueError(f"{page}:{start}: unclosed code fence")
        number += 1  # the closing fence
        counts[heading] = counts.get(heading, 0) + 1
        blocks.append(
            Block(
                page=page,
                line=start,
                heading=heading,
                index=counts[heading],
                language=fence.group(2).lower(),
                code=textwrap.dedent("\n".join(body_lines)) + "\n",
                **pending,  # type: ignore[arg-type]
            )
        )
        pending = {}
    return blocks


def page_blocks(path: Path, root: Path) -> list[Block]:
    """The blocks of the page at ``path``, named relative to ``root``."""
    return parse_blocks(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix())
