#!/usr/bin/env python3
"""The documents a reader follows, as links of the Markdown pages and as names in other files
(stdlib only): scripts/dist ships what the shipped pages link to, test_docs.py checks the tree
and test_release.py the unpacked tarball with the same rules.

  scripts/doclinks.py closure TOP PAGE...   every file PAGE links to, transitively, relative to TOP
  scripts/doclinks.py check TOP             each broken link, anchor or named document or section
                                            under TOP, one a line; exit 1 if there is one

A link is relative (no scheme), outside fenced code; its #anchor is GitHub's id of a heading
(lower case, punctuation but - and _ dropped, spaces to -, a repeated one suffixed -1, -2, ...) or
an explicit <a id|name="...">. A name is what a message, an alert or a runbook line tells a reader
to open (comments are not read): README, runbook or docs/<page>.md, alone or with a quoted
section, as in the HINT `README "Server settings"` or `docs/design.md, "Claiming"`, optionally
`item N` of its numbered list or `step N of` it; the section is a heading of that page that
starts with the quoted text.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
SCHEME = re.compile(r"[a-z][a-z0-9+.-]*:")
HEADING = re.compile(r"(?m)^(#{1,6})\s+(.*?)\s*#*\s*$")
# Where names are read: the scripts' messages (HINTs, echoes), the alerts, the runbook.
NAMING = ("deploy", "revert", "verify", "monitoring", "sql", "scripts", "docs/runbooks")
COMMENT = {".sql": "--", ".psql": "--", ".md": None, ".json": None}   # else "#"
DOCUMENT = {"README": "README.md", "runbook": "docs/runbooks/call-timeout-reaper.md"}
NAME = re.compile(
    r"\b(README|runbook|docs/[\w./-]+\.md)\b"
    r"(?:(?:[,:]\s*|\s+)\(?(?:(?:step|item) (\d+) of )?\"([^\"]{2,100})\"(?:\s+item (\d+))?)?")


def prose(text: str) -> str:
    """The page without its fenced code blocks: a link there is code, not a link."""
    return re.sub(r"(?ms)^(```|~~~).*?^\1", "", text)


def plain(heading: str) -> str:
    """A heading's text as read: links to their text, no code marks or quotes."""
    return re.sub(r"[`\"]", "", re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)).strip()


def headings(page: Path) -> list[tuple[int, str, str]]:
    """(level, plain text, the section's text up to the next heading as high) of each heading."""
    text = prose(page.read_text())
    found = list(HEADING.finditer(text))
    sections = []
    for i, m in enumerate(found):
        level = len(m.group(1))
        end = next((n.start() for n in found[i + 1:] if len(n.group(1)) <= level), len(text))
        sections.append((level, plain(m.group(2)), text[m.end():end]))
    return sections


def anchors(page: Path) -> set[str]:
    """GitHub's heading ids of a page and its explicit <a id|name="...">."""
    text = page.read_text()
    seen: dict[str, int] = {}
    found = set(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
    for m in HEADING.finditer(prose(text)):
        heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(2))
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def links(page: Path) -> list[str]:
    return LINK.findall(prose(page.read_text()))


def relative_links(page: Path) -> list[tuple[str, Path, str]]:
    """(link, the file or folder it names, its anchor) of each relative link of the page."""
    found = []
    for target in links(page):
        if SCHEME.match(target):   # https:, mailto: ... are not fetched
            continue
        path, _, anchor = target.partition("#")
        found.append((target, (page.parent / path).resolve() if path else page.resolve(), anchor))
    return found


def broken_links(page: Path, top: Path) -> list[str]:
    broken = []
    page, top = page.resolve(), top.resolve()
    for target, linked, anchor in relative_links(page):
        if not linked.is_relative_to(top) or not linked.exists():
            broken.append(f"{page.relative_to(top)}: {target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{page.relative_to(top)}: {target}: no heading #{anchor} in {linked.relative_to(top)}")
    return broken


def closure(top: Path, pages: list[Path]) -> set[str]:
    """Every file or folder the pages link to, and what the linked pages link to, relative to top
    (the pages included); a link that leaves top or names nothing is not followed."""
    top = top.resolve()
    todo, seen = [p.resolve() for p in pages], set()
    while todo:
        page = todo.pop()
        if page in seen:
            continue
        seen.add(page)
        if page.suffix == ".md" and page.is_file():
            todo += [linked for _, linked, _ in relative_links(page)
                     if linked.is_relative_to(top) and linked.exists()]
    return {str(p.relative_to(top)) for p in seen}


def named(top: Path) -> list[tuple[str, str, str | None, int | None]]:
    """(where, document, section or None, item or None) of each name in the files of NAMING."""
    found = []
    for folder in NAMING:
        for path in sorted((top / folder).rglob("*")):
            if not path.is_file() or path.name == Path(__file__).name:
                continue
            try:
                text = path.read_text()
            except UnicodeDecodeError:
                continue
            # A name may run over the lines of a folded YAML string: the lines are read as one.
            comment = COMMENT.get(path.suffix, "#")
            flat = " ".join(line.strip() for line in text.splitlines()
                            if not (comment and line.lstrip().startswith(comment)))
            for m in NAME.finditer(flat):
                document = DOCUMENT.get(m.group(1), m.group(1))
                item = m.group(2) or m.group(4)
                found.append((str(path.relative_to(top)), document, m.group(3), int(item) if item else None))
    return found


def broken_names(top: Path) -> list[str]:
    broken = []
    for where, document, section, item in named(top):
        page = top / document
        what = f"{where}: {document}" + (f' "{section}"' if section else "") + (f" item {item}" if item else "")
        if not page.is_file():
            broken.append(f"{what}: no such file")
            continue
        if section is None:
            continue
        matches = [body for _, heading, body in headings(page) if heading.lower().startswith(section.lower())]
        if not matches:
            broken.append(f"{what}: no such section")
        elif item and not any(re.search(rf"(?m)^{item}\. ", body) for body in matches):
            broken.append(f"{what}: the section has no item {item}")
    return broken


def check(top: Path) -> list[str]:
    top = top.resolve()
    pages = sorted(p for p in top.rglob("*.md") if ".venv" not in p.parts and "node_modules" not in p.parts)
    return [b for page in pages for b in broken_links(page, top)] + broken_names(top)


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "closure":
        top = Path(argv[1])
        print("\n".join(sorted(closure(top, [top / p for p in argv[2:]]))))
        return 0
    if len(argv) == 2 and argv[0] == "check":
        broken = check(Path(argv[1]))
        for line in broken:
            print(line)
        return 1 if broken else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
