"""The documentation: a short front page, and no link in it or in docs/ that leads nowhere.

The README is the front page (at most MAX_README_LINES lines) and links each page of docs/. Every
relative link, markdown `[text](path)` or `<img src="path">`, in README.md and docs/*.md must name
a file that exists, read from the page's own folder; web links and in-page #anchors are not
followed, and a link's #fragment or ?query is dropped. Code is skipped: CLI synopses such as
`[--png OUT.png]` are no links.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_README_LINES = 250
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)
MARKDOWN_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)")
IMG_SRC = re.compile(r"<img\b[^>]*\bsrc=[\"']([^\"']+)[\"']", re.IGNORECASE)


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def link_targets(text: str) -> list[str]:
    """Every link target in markdown `text`, outside code, as written."""
    prose = CODE.sub("", text)
    return MARKDOWN_LINK.findall(prose) + IMG_SRC.findall(prose)


def local_path(target: str) -> str | None:
    """The file part of a relative link; None for a web link, a mail link or an in-page anchor."""
    if re.match(r"[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith(("#", "//")):
        return None
    return re.split(r"[#?]", target, maxsplit=1)[0] or None


def broken_links(page: Path, text: str) -> list[str]:
    """The relative links of `text` (the content of `page`) that name no existing file."""
    paths = [path for path in map(local_path, link_targets(text)) if path]
    return [path for path in paths if not (page.parent / path).is_file()]


def test_every_relative_link_in_the_readme_and_docs_names_a_file():
    broken = {page.relative_to(ROOT).as_posix(): broken_links(page, page.read_text()) for page in pages()}
    assert {page: links for page, links in broken.items() if links} == {}


def test_the_link_check_sees_a_broken_link_an_image_and_skips_code_and_the_web():
    text = (
        "[ok](README.md#two-commands) [gone](docs/missing.md?x=1) ![img](assets/none.png)\n"
        '<img src="assets/lost.png" width="9"> [web](https://example.org/x.md) [here](#top)\n'
        "`python -m visuals export [--png OUT.png](nope.md)`\n```\n[a](also-nope.md)\n```\n"
    )
    assert broken_links(ROOT / "README.md", text) == ["docs/missing.md", "assets/none.png", "assets/lost.png"]


def test_the_readme_is_a_front_page_that_links_every_docs_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= MAX_README_LINES
    linked = {local_path(target) for target in link_targets(readme)}
    assert {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")} <= linked
