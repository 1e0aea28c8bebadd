"""The Grafana dashboard and the alert rules only query metrics the exporter really serves (names
taken from a real scrape); the dashboard shows cycles, items, backlog, reap lag, errors, job
failures and build info, per job and instance, quantiles per instance, with a panel linked to each
alert's runbook section; the alerts keep the monitoring-mixin conventions, link the runbook page a
team sets or this release's, and the runbook has a section for each of them, in its table's order."""

from __future__ import annotations

import json
import re
import tomllib

import pytest
import yaml
from call_reaper_exporter import PREFIX, ReaperCollector
from exporter_support import (
    DASHBOARD,
    REPO,
    collect_once,
    dashboard_queries,
    sample,
    samples_of,
)

P = PREFIX
ALERTS = REPO / "monitoring" / "alerts.yml"
RUNBOOK = REPO / "docs" / "runbooks" / "call-timeout-reaper.md"
NAME = re.compile(r"\bmessenger_call_reaper_[A-Za-z0-9_:]*")
# The metrics an expression reads: ours, and Prometheus' own `up` of the exporter's target.
READS = re.compile(r"\b(?:messenger_call_reaper_[A-Za-z0-9_:]*|(?<![\w:])up(?=\{))")
# The runbook page when the Prometheus has no external label call_reaper_runbook_url: this
# release's (alerts.yml's header).
DEFAULT_PAGE = re.search(r"^#\s+default runbook page: (\S+)$", ALERTS.read_text(), re.MULTILINE).group(1)
RUNBOOK_URL = '{{{{ or $externalLabels.call_reaper_runbook_url "{page}" }}}}#{anchor}'


def rules() -> list[dict]:
    return [rule for group in yaml.safe_load(ALERTS.read_text())["groups"]
            for rule in group["rules"] if "alert" in rule]


def panels() -> list[dict]:
    return json.loads(DASHBOARD.read_text())["panels"]


def panel_queries(panel: dict) -> list[str]:
    return [t["expr"] for t in panel.get("targets", [])]


@pytest.fixture
def served(monitor_dsn) -> set[str]:
    collector = ReaperCollector(monitor_dsn)
    samples = collect_once(collector)
    collector.close()
    assert sample(samples, P + "up") == 1, "needs a database that answers"
    families = list(samples.collect())
    # A family is served even while it has no sample (job_failing before any job run finished).
    return {name for name, _ in samples_of(families)} | {f.name for f in families}


def test_dashboard_queries_only_served_metrics(served):
    used = {name for query in dashboard_queries() for name in NAME.findall(query)}
    assert used, "no messenger_call_reaper_* metric found in the dashboard"
    assert used - served == set()


def test_alert_rules_mention_only_served_metrics(served):
    used = set(NAME.findall(ALERTS.read_text()))
    assert used, "no messenger_call_reaper_* metric found in alerts.yml"
    assert used - served == set()


@pytest.mark.parametrize("what, pattern", [
    ("cycles by result", r"by \(result\) \(rate\(messenger_call_reaper_run_total\b"),
    ("items by outcome", r"by \(outcome\) \(rate\(messenger_call_reaper_items_total\b"),
    ("backlog", r"messenger_call_reaper_active_backlog\b"),
    ("reap-lag quantiles", (r"histogram_quantile\(0\.\d+, sum by \(instance, le\) \(rate\("
                            r"messenger_call_reaper_reap_lag_seconds_bucket\b")),
    ("errors", r"rate\(messenger_call_reaper_errors_total\b"),
    ("job failures", r"messenger_call_reaper_job_failing\b"),
    ("build info", r"messenger_call_reaper_build_info\b"),
])
def test_dashboard_shows(what, pattern):
    assert any(re.search(pattern, query) for query in dashboard_queries()), what


def runbook_anchors() -> set[str]:
    # GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens.
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.+)$", RUNBOOK.read_text(), re.MULTILINE)}


def test_alerts_follow_the_mixin_conventions():
    assert len(rules()) == len(re.findall(r"- alert: ", ALERTS.read_text()))
    for rule in rules():
        name = rule["alert"]
        assert rule["labels"]["severity"] in ("critical", "warning"), name
        assert rule.get("for"), f"{name} has no for:"
        assert "{{" not in rule["annotations"]["summary"], f"{name}: summary must be static"
        assert rule["annotations"]["description"], name


def version(text: str) -> tuple[int, ...]:
    """The release part of a version: 2.1.0.dev0 (main between releases) is 2.1.0."""
    return tuple(int(n) for n in re.match(r"\d+(?:\.\d+)*", text).group(0).split("."))


def test_the_default_runbook_page_is_this_releases():
    # Pinned to a release tag, never a branch: an installed release links the runbook it came with.
    # At least the version being built (pyproject.toml, which `make release` sets): the next
    # release's before it is tagged, and a release that forgot to move it fails here.
    found = re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+/blob/v(\d+\.\d+\.\d+)"
                         r"/docs/runbooks/call-timeout-reaper\.md", DEFAULT_PAGE)
    assert found, DEFAULT_PAGE
    built = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert version(found[1]) >= version(built), (found[1], built)


def test_every_runbook_link_names_its_alerts_section():
    anchors = runbook_anchors()
    for rule in rules():
        anchor = rule["alert"].lower()
        assert rule["annotations"]["runbook_url"] == RUNBOOK_URL.format(page=DEFAULT_PAGE, anchor=anchor)
        assert anchor in anchors, f"{rule['alert']}: no section of that name in the runbook"
    # Grafana's links: the same page, from the dashboard's hidden variable runbook_url.
    variables = {v["name"]: v for v in json.loads(DASHBOARD.read_text())["templating"]["list"]}
    assert variables["runbook_url"]["type"] == "constant"
    assert variables["runbook_url"]["query"] == DEFAULT_PAGE
    links = [link for panel in panels() for link in panel.get("links", [])]
    assert links
    for link in links:
        alert = link["title"].removeprefix("Runbook: ")
        assert link["url"] == "${runbook_url}#" + alert.lower(), link
        assert alert.lower() in anchors, link


def test_quantiles_are_per_instance():
    """A histogram_quantile over buckets summed across instances mixes exporters whose lag and
    polling interval differ: each keeps instance (dashboard) or reads one target's series as they
    are (alerts)."""
    queries = dashboard_queries() + [r["expr"] for r in rules()]
    arguments = [query[m.end():] for query in queries
                 for m in re.finditer(r"histogram_quantile\(\s*[\d.]+\s*,\s*", query)]
    assert len(arguments) >= 6, arguments
    for argument in arguments:
        grouping = re.match(r"sum by \(([^)]*)\)", argument)
        if grouping:
            assert {"instance", "le"} <= {g.strip() for g in grouping[1].split(",")}, argument
        else:
            assert argument.startswith("rate("), argument


def test_hints_name_sections_that_exist():
    """A pointer to a page's section (docs/x.md, "title"; README "title") names a heading of it."""
    hints = re.findall(r'\b([\w/.-]+\.md|README),?\s+"([^"]+)"', " ".join(ALERTS.read_text().split()))
    assert hints, "no hint found"
    for page, title in hints:
        text = (REPO / (page if page.endswith(".md") else page + ".md")).read_text()
        headings = [h.replace("`", "") for h in re.findall(r"^#+ (.+)$", text, re.MULTILINE)]
        assert any(h.startswith(title) for h in headings), (page, title)


def test_the_exporters_own_target_has_rules():
    exprs = {r["alert"]: r["expr"] for r in rules()}
    assert any(re.fullmatch(r'up\{job="[^"]+"\} == 0', e) for e in exprs.values()), exprs
    assert any(re.fullmatch(r'absent\(up\{job="[^"]+"\}\)', e) for e in exprs.values()), exprs


def test_every_alert_has_a_panel_linked_to_its_runbook():
    for rule in rules():
        reads = set(READS.findall(rule["expr"]))
        assert reads, rule["alert"]
        linked = [p for p in panels()
                  if "${runbook_url}#" + rule["alert"].lower() in [lk["url"] for lk in p.get("links", [])]
                  and reads <= {n for q in panel_queries(p) for n in READS.findall(q)}]
        assert linked, f"{rule['alert']}: no panel showing {sorted(reads)} links its runbook"


def test_dashboard_selects_by_job_and_instance():
    variables = {v["name"]: v for v in json.loads(DASHBOARD.read_text())["templating"]["list"]}
    assert {"job", "instance"} <= set(variables)
    assert '{job=~"$job"}' in variables["instance"]["definition"]
    for panel in panels():
        for query in panel_queries(panel):
            for selector in re.findall(r"\b(?:messenger_call_reaper_\w+|up)(\{[^}]*\})?", query):
                assert 'job=~"$job"' in selector and 'instance=~"$instance"' in selector, query


def test_runbook_alert_table_lists_every_alert():
    section = RUNBOOK.read_text().split("\n## Alerts\n", 1)[1].split("\n### ", 1)[0]
    listed = re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE)
    assert sorted(listed) == sorted(r["alert"] for r in rules())
    # One section per alert, named after it, in the table's order (the order pages arrive).
    sections = re.findall(r"^### (CallReaper\w+)$", RUNBOOK.read_text(), re.MULTILINE)
    assert sections == listed
