"""The documents a reader follows, checked on the files (no database needed).

- every relative link in README.md, CONTRIBUTING.md, CHANGELOG.md and docs/ names a file or
  folder that exists, and its #anchor a heading of that page (GitHub's slugs) or an HTML anchor;
  links to other sites are not fetched;
- every document, section and item named in a script's message (a deploy refusal's HINT), an
  alert or a runbook line exists (`README "Server settings"`: a heading of the README);
  scripts/doclinks.py holds both rules, which test_release.py applies to the unpacked tarball;
- the README is a landing page: at most 200 lines, what the reaper does with its numbers in the
  first 10, then exactly two commands, `make run` and `make test`; .ci/run calls that same test
  command; then its sections in the order a DBA needs them.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from doclinks import anchors, broken_links, broken_names, links, named

PAGES = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md",
                *(ROOT / "docs").rglob("*.md")])
README = ROOT / "README.md"


def test_the_pages_are_found():
    assert README in PAGES and len(PAGES) >= 10


def test_the_link_parser_sees_links_and_anchors():
    # The checks below are empty if the parser finds nothing: a page whose links are known.
    assert "docs/runbooks/call-timeout-reaper.md" in links(README)
    assert "is-it-working" in anchors(README)
    assert "pg_cron-in-another-database-crondatabase_name--postgres" in anchors(ROOT / "docs" / "scheduling.md")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path):
    broken = broken_links(page, ROOT)
    assert not broken, "\n".join(broken)


def test_the_name_parser_sees_hints_and_alerts():
    # The check below is empty if the parser finds nothing: names known to be there.
    found = named(ROOT)
    assert ("deploy/requires/call_reaper_roles.sql", "README.md", "Deploy into an existing database", 2) in found
    assert ("deploy/cron/call_reaper.sql", "README.md", "Server settings", None) in found
    assert ("monitoring/alerts.yml", "docs/scheduling.md", "pg_cron in libpq mode", None) in found
    assert ("deploy/functions/_reap_ledger.sql", "docs/runbooks/call-timeout-reaper.md",
            "bad magic number in sequence", None) in found


def test_a_name_that_leads_nowhere_is_reported(tmp_path):
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "x.sql").write_text(
        "RAISE ... HINT = 'see README \"Setup\" item 2, docs/gone.md and README, \"Nowhere\"';\n"
        "-- a comment naming README \"Commented\" is not read\n")
    (tmp_path / "README.md").write_text("# x\n\n## Setup\n\n1. one\n")
    assert broken_names(tmp_path) == [
        'deploy/x.sql: README.md "Setup" item 2: the section has no item 2',
        "deploy/x.sql: docs/gone.md: no such file",
        'deploy/x.sql: README.md "Nowhere": no such section']


def test_every_named_document_and_section_exists():
    broken = broken_names(ROOT)
    assert not broken, "\n".join(broken)


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
