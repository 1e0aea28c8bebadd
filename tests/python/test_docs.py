"""The documents a reader follows, checked on the files (no database needed).

- every relative link in README.md, CONTRIBUTING.md, CHANGELOG.md and docs/ names a file or
  folder that exists, and its #anchor a heading of that page (GitHub's slugs) or an HTML anchor;
  links to other sites are not fetched;
- the README is a landing page: at most 200 lines, what the reaper does with its numbers in the
  first 10, then exactly two commands, `make run` and `make test`; .ci/run calls that same test
  command; then its sections in the order a DBA needs them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md",
                *(ROOT / "docs").rglob("*.md")])
README = ROOT / "README.md"
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def prose(text: str) -> str:
    """The page without its fenced code blocks: a link there is code, not a link."""
    return re.sub(r"(?ms)^(```|~~~).*?^\1", "", text)


def anchors(page: Path) -> set[str]:
    """GitHub's heading ids of a page (lower case, punctuation but - and _ dropped, spaces to -,
    a repeated one suffixed -1, -2, ...), and its explicit <a id|name="...">."""
    text = page.read_text()
    seen: dict[str, int] = {}
    found = set(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
    for heading in re.findall(r"(?m)^#{1,6}\s+(.*?)\s*#*\s*$", prose(text)):
        heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def links(page: Path) -> list[str]:
    return LINK.findall(prose(page.read_text()))


def test_the_pages_are_found():
    assert README in PAGES and len(PAGES) >= 10


def test_the_link_parser_sees_links_and_anchors():
    # The checks below are empty if the parser finds nothing: a page whose links are known.
    assert "docs/runbooks/call-timeout-reaper.md" in links(README)
    assert "is-it-working" in anchors(README)
    assert "pg_cron-in-another-database-crondatabase_name--postgres" in anchors(ROOT / "docs" / "scheduling.md")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path):
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):   # https:, mailto: ...
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}:\n" + "\n".join(broken)


def test_the_readme_is_a_landing_page():
    lines = README.read_text().splitlines()
    assert len(lines) <= 200
    opening = " ".join(lines[:10])
    for fact in ("45 s", "Missed", "2 h", "Failed", "outbox", "same transaction", "pg_cron", "every 15 s"):
        assert fact in opening, f"the README's first 10 lines do not say {fact!r}"
    first_block = re.search(r"(?ms)^```sh\n(.*?)^```", README.read_text()).group(1)
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()]
    assert commands == ["make run", "make test"]
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert ci == [commands[1]], ".ci/run must run exactly the README's test command"
    sections = re.findall(r"(?m)^## (.*)$", README.read_text())
    assert sections == ["Deploy into an existing database", "Is it working", "Upgrade", "Uninstall", "Documents"]
