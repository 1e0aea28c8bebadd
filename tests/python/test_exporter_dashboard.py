"""The Grafana dashboard and the alert rules only query metrics the exporter really serves (names
taken from a real scrape), and the dashboard shows cycles, items, backlog, reap lag and errors."""

from __future__ import annotations

import re

import pytest
from call_reaper_exporter import PREFIX, ReaperCollector
from exporter_support import REPO, collect_once, dashboard_queries, sample, samples_of

P = PREFIX
ALERTS = REPO / "monitoring" / "alerts.yml"
NAME = re.compile(r"\bmessenger_call_reaper_[A-Za-z0-9_:]*")


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
    ("reap-lag quantiles", (r"histogram_quantile\(0\.\d+, sum by \(le\) \(rate\("
                            r"messenger_call_reaper_reap_lag_seconds_bucket\b")),
    ("errors", r"rate\(messenger_call_reaper_errors_total\b"),
])
def test_dashboard_shows(what, pattern):
    assert any(re.search(pattern, query) for query in dashboard_queries()), what


def test_alert_runbook_links_resolve():
    runbook = REPO / "docs" / "runbooks" / "call-timeout-reaper.md"
    # GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens.
    anchors = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
               for h in re.findall(r"^#+ (.+)$", runbook.read_text(), re.MULTILINE)}
    links = re.findall(r"runbook_url: (\S+)", ALERTS.read_text())
    assert len(links) == len(re.findall(r"- alert: ", ALERTS.read_text()))
    for link in links:
        path, _, anchor = link.partition("#")
        assert (REPO / path).resolve() == runbook.resolve(), link
        assert anchor in anchors, link
