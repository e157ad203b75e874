"""Every relative link in the README, docs/ and the studies' results pages points to a file that exists.

A link to a heading (``page.md#heading``) must also name a heading of that page, spelled as GitHub
makes anchors. And every study's ``results.md`` is linked from the README, so each reading is one
link away from it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

# [text](target) and ![alt](target); the target ends at whitespace (a title may follow) or ")".
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.MULTILINE)
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def pages() -> list[Path]:
    """The pages whose links are checked: the README, docs/*.md and every results page."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(RESULTS.rglob("results.md"))]


def prose_lines(text: str, *, keep_code: bool = False) -> list[str]:
    """The lines outside fenced code blocks, with inline code blanked unless ``keep_code`` (links in
    code are not links, but a heading's code is part of its anchor).

    Example:
        >>> prose_lines("see [a](a.md) `[b](b.md)`\\n```\\n[c](c.md)\\n```")
        ['see [a](a.md) ']
        >>> prose_lines("## Loss (`loss.py`)", keep_code=True)
        ['## Loss (`loss.py`)']
    """
    kept, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            kept.append(line if keep_code else INLINE_CODE.sub("", line))
    return kept


def links(text: str) -> list[str]:
    """Every link target in a markdown text, in order.

    Example:
        >>> links('[x](docs/a.md#top) ![img](b.png "title") [y](https://example.com)\\n[r]: c.md')
        ['docs/a.md#top', 'b.png', 'https://example.com', 'c.md']
    """
    prose = "\n".join(prose_lines(text))
    return INLINE_LINK.findall(prose) + REFERENCE_LINK.findall(prose)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens.

    Example:
        >>> slug("The quick start's recipe (WebShop-v0)")
        'the-quick-starts-recipe-webshop-v0'
        >>> slug("Agents: `policy`, collector")
        'agents-policy-collector'
        >>> slug("Credit rules (`agents/algorithms/base.py`)")
        'credit-rules-agentsalgorithmsbasepy'
    """
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading counts as its text
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings; a repeated heading gets ``-1``, ``-2``, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose_lines(page.read_text(encoding="utf-8"), keep_code=True):
        match = HEADING.match(line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(page: Path) -> list[str]:
    """The relative links of a page that name no existing file (or no heading of an existing page)."""
    broken = []
    for target in links(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # https:, mailto:, ...
            continue
        path_part, _, anchor = target.partition("#")
        resolved = (page.parent / path_part).resolve() if path_part else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading with anchor #{anchor} in {path_part or page.name}")
    return broken


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path):
    assert broken_links(page) == []


def test_the_checker_finds_a_missing_file_and_a_missing_heading(tmp_path: Path):
    (tmp_path / "other.md").write_text("# Other page\n\n## Setup: step 1\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#setup-step-1) [gone](missing.md) [bad anchor](other.md#nowhere) [self](#title)\n"
        "```\n[in code](also-missing.md)\n```\n# Title\n"
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "other.md#nowhere: no heading with anchor #nowhere in other.md",
    ]


def test_every_study_reading_is_linked_from_the_readme():
    readme = ROOT / "README.md"
    linked = {(readme.parent / target.partition("#")[0]).resolve() for target in links(readme.read_text())}
    studies = sorted(RESULTS.rglob("results.md"))
    assert studies, "no results.md under benchmarks/results"
    assert [str(study.relative_to(ROOT)) for study in studies if study.resolve() not in linked] == []


def test_every_benchmark_script_is_named_in_the_benchmarks_page() -> None:
    # docs/benchmarks.md promises where each script's figures live; a new script must add its row.
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    scripts = sorted(path.name for path in (ROOT / "benchmarks").glob("*.py") if not path.name.startswith("_"))
    assert scripts and [name for name in scripts if f"`{name}" not in page] == []
