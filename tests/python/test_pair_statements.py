"""The relation-pair cycle's two texts of one statement stay one statement.

Each statement of the cycle that reads or writes the pair has two texts in its routine
(deploy/functions/*.sql): the default pair's static statement, whose cached generic plan is
why a cycle is cheap, and the EXECUTE format($pair$...$pair$, <relations>) ... USING ... text
another pair (a colocated shard pair) runs. Here the dynamic text is turned back into the
static one (%1$s/%2$s -> the default relations, $n -> the n-th USING expression, the INTO list
put back) and both are compared, comments and whitespace aside: an edit of one text without
the other fails. Every read or write of the pair's relations on the cycle's path must be the
static half of such a pair, so a statement added without its twin fails too. No database.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ROOT / "deploy" / "functions"
DEFAULT = {"calls": "messenger.call_sessions", "outbox": "messenger.realtime_outbox"}
# Routine -> how many statements on the pair it has. The floor's routines (_reap_floor_trusted,
# _reap_save_floor, _reap_first_passed) are left out on purpose: only the default pair has a
# claim floor, so they only ever read messenger.call_sessions.
PAIRED = {"_reap_claim_lane": 1, "_reap_claim_retries": 1, "_reap_apply": 1, "_reap_lanes": 1,
          "_reap_phase": 1, "_reap_close": 0, "_reap_pair": 0}
PAIR = re.compile(
    r"IF (?P<cond>[^\n]*) THEN\n"
    r"(?P<static>(?:(?!THEN\n|\n\s*ELSE\n|END IF;).)*?);\n\s*ELSE\n"
    r"(?:\s*--[^\n]*\n)*"
    r"\s*(?:RETURN QUERY )?EXECUTE format\(\$pair\$(?P<template>.*?)\$pair\$, (?P<rels>[^)]*)\)"
    r"(?:\s+INTO (?P<into>[^\n]*?))?\s+USING (?P<using>[^;]*);\n\s*END IF;",
    re.DOTALL)
ACCESS = re.compile(r"\b(?:FROM|UPDATE|INTO|JOIN)\s+(messenger\.(?:call_sessions|realtime_outbox))\b(?!\.)")


def routine(name: str) -> str:
    return (FUNCTIONS / f"{name}.sql").read_text()


def squeeze(text: str) -> str:
    return " ".join(re.sub(r"--[^\n]*", "", text).split())


def as_static(match: re.Match) -> str:
    """The dynamic text spelled as the default pair's static statement."""
    rels = [r.strip() for r in match["rels"].split(",")]
    using = [u.strip() for u in match["using"].split(",")]
    text = match["template"]

    def relation(m: re.Match) -> str:
        arg = rels[int(m[1]) - 1]
        kinds = [k for k in DEFAULT if k in arg]
        assert len(kinds) == 1, f"format argument {arg!r} is neither the pair's calls nor its outbox"
        return DEFAULT[kinds[0]]

    text = re.sub(r"%(\d+)\$s", relation, text)
    assert "%" not in text.replace("%%", ""), "a format placeholder other than %n$s"
    text = text.replace("%%", "%")
    text = re.sub(r"\$(\d+)", lambda m: using[int(m[1]) - 1], text)
    return squeeze(text)


def as_compared(match: re.Match) -> str:
    """The static statement, its PL/pgSQL INTO list taken out (EXECUTE holds it)."""
    static = match["static"]
    if match["into"]:
        static, n = re.subn(r"\s+INTO\s+" + r",\s*".join(map(re.escape, re.split(r",\s*", match["into"]))) + r"\s",
                            " ", static, count=1)
        assert n == 1, "the static statement has not the INTO list its EXECUTE has"
    return squeeze(re.sub(r"^\s*RETURN QUERY\s", "", static))


@pytest.mark.parametrize("name", sorted(PAIRED))
def test_each_statement_on_the_pair_has_its_twin_and_they_are_one_statement(name):
    src = routine(name)
    pairs = list(PAIR.finditer(src))
    assert len(pairs) == PAIRED[name], f"{name}: {len(pairs)} static/EXECUTE pairs, expected {PAIRED[name]}"
    for m in pairs:
        assert "'messenger.call_sessions'::regclass" in m["cond"] or m["cond"] == "v_whole", \
            f"{name}: the static branch is not chosen by the default pair: IF {m['cond']}"
        assert as_static(m) == as_compared(m), f"{name}: the EXECUTE text drifted from the static statement"
    # Every read or write of the pair's relations is the static half of a pair.
    spans = [m.span("static") for m in pairs]
    body = re.sub(r"--[^\n]*", lambda c: " " * len(c[0]), src)
    loose = [a.group(0) for a in ACCESS.finditer(body) if not any(lo <= a.start() < hi for lo, hi in spans)]
    assert not loose, f"{name}: statements on the pair without an EXECUTE twin: {loose}"


def test_the_comparison_sees_a_drift():
    # The check above must fail on a one-character drift of either text, or it checks nothing.
    src = routine("_reap_claim_lane")
    m = next(PAIR.finditer(src))
    drifted = src.replace("LIMIT $9", "LIMIT $8", 1)
    assert as_static(next(PAIR.finditer(drifted))) != as_compared(m)
    drifted = src.replace("ORDER BY s.started_at, s.call_id\n         LIMIT p_limit",
                          "ORDER BY s.call_id\n         LIMIT p_limit", 1)
    d = next(PAIR.finditer(drifted))
    assert as_static(d) != as_compared(d)
    loose = "UPDATE messenger.call_sessions SET status = 'x';"
    assert ACCESS.search(loose) and not ACCESS.search("v messenger.call_sessions.status%TYPE;")
