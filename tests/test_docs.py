"""The README a newcomer reads to the end and the docs it links: the README fits on a few
screens with a contents list, holds the two commands a fresh machine needs (CI runs the test
command as written there), and every link in it and in docs/ reaches a file and a heading
that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
START_COMMAND = 'python -m pip install ".[bot]" && python bot.py'
TEST_COMMAND = 'python -m pip install ".[test]" && python -m pytest'
README_MAX_LINES = 250
# Screenshots the README shows, added by hand: not checked until they exist.
PICTURES = ROOT / "docs" / "images"
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def readme() -> str:
    return README.read_text(encoding="utf-8")


def anchors(markdown: Path) -> set[str]:
    """The anchors GitHub gives the headings of `markdown`: lowercased, punctuation other
    than `-` and `_` dropped, spaces made hyphens."""
    text = FENCE.sub("", markdown.read_text(encoding="utf-8"))
    headings = re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)
    return {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings
    }


def links(markdown: Path) -> list[str]:
    """The link targets of `markdown`, outside code."""
    text = CODE_SPAN.sub("", FENCE.sub("", markdown.read_text(encoding="utf-8")))
    return LINK.findall(text)


def test_the_readme_fits_on_a_few_screens_with_a_contents_list() -> None:
    text = readme()

    assert len(text.splitlines()) <= README_MAX_LINES
    assert "## 目录" in text


def test_the_readme_holds_the_start_and_the_test_command_as_shell_blocks() -> None:
    blocks = re.findall(r"^```bash\n(.*?)\n```", readme(), re.MULTILINE | re.DOTALL)

    assert START_COMMAND in blocks
    assert TEST_COMMAND in blocks


def test_ci_runs_the_readmes_test_command_last() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()

    assert script[-1] == TEST_COMMAND


@pytest.mark.parametrize("markdown", [README, *DOCS], ids=lambda path: path.name)
def test_every_link_reaches_a_file_and_a_heading(markdown: Path) -> None:
    broken = []
    for target in links(markdown):
        if re.match(r"[a-z]+:", target):
            continue  # another site
        path, _, anchor = target.partition("#")
        file = (markdown.parent / path).resolve() if path else markdown
        if file.is_relative_to(PICTURES):
            continue
        if not file.exists() or (anchor and anchor not in anchors(file)):
            broken.append(target)

    assert broken == []


def test_the_readme_links_every_page_of_the_docs() -> None:
    linked = {
        (ROOT / target.partition("#")[0]).resolve()
        for target in links(README)
        if target.startswith("docs/")
    }

    assert {page.resolve() for page in DOCS} <= linked
