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
# Routine -> how many statements on the pair it has (the floor's routines too: each pair keeps
# its own claim floor, a position in its calls relation).
PAIRED = {"_reap_claim_lane": 1, "_reap_claim_retries": 1, "_reap_apply": 1, "_reap_lanes": 1,
          "_reap_phase": 1, "_reap_close": 0, "_reap_pair": 0, "_reap_floor_trusted": 1,
          "_reap_save_floor": 2, "_reap_first_passed": 1}
# The one difference two twins may have, in _reap_apply only: an outbox relation whose id has no
# default (a Citus shard) gets `id` named in the INSERT's column list and its value from the
# default outbox's sequence, through two format arguments that are '' on any other pair.
# Argument -> (the one value the routine may give it besides '', where it must stand).
ID_ARGS = {
    "v_id_column": ("'id, '", r"INSERT INTO %2\$s\s*\(%{n}\$skind,"),
    "v_id_value": ("'pg_catalog.nextval($12), '", r"\bSELECT %{n}\$s\$8,"),
}
ID_ROUTINE = "_reap_apply"
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


def as_static(match: re.Match, name: str) -> str:
    """The dynamic text spelled as the default pair's static statement (the id's arguments as
    '', where they stand)."""
    rels = [r.strip() for r in match["rels"].split(",")]
    using = [u.strip() for u in match["using"].split(",")]
    text = match["template"]
    for n, arg in enumerate(rels, 1):
        if arg in ID_ARGS:
            assert name == ID_ROUTINE, f"{name}: format argument {arg} is {ID_ROUTINE}'s alone"
            assert text.count(f"%{n}$s") == 1 and re.search(ID_ARGS[arg][1].format(n=n), text), \
                f"{name}: {arg} (%{n}$s) is not where the outbox's id goes"

    def relation(m: re.Match) -> str:
        arg = rels[int(m[1]) - 1]
        if arg in ID_ARGS:
            return ""
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
        assert as_static(m, name) == as_compared(m), f"{name}: the EXECUTE text drifted from the static statement"
    # Every read or write of the pair's relations is the static half of a pair.
    spans = [m.span("static") for m in pairs]
    body = re.sub(r"--[^\n]*", lambda c: " " * len(c[0]), src)
    loose = [a.group(0) for a in ACCESS.finditer(body) if not any(lo <= a.start() < hi for lo, hi in spans)]
    assert not loose, f"{name}: statements on the pair without an EXECUTE twin: {loose}"


def test_the_id_arguments_are_the_outbox_id_or_nothing():
    # Each is '' as declared, and set to exactly its one value: anything else would be a drift
    # the comparison above does not see.
    src = routine(ID_ROUTINE)
    for arg, (value, _) in ID_ARGS.items():
        assert re.findall(rf"\b{arg}\s+text\s*:=\s*([^;]*);", src) == ["''"], f"{arg} is not declared as ''"
        assert re.findall(rf"^\s*{arg}\s*:=\s*([^;]*);", src, re.MULTILINE) == [value], f"{arg} is set to something else than {value}"
    # $12 is the sequence: the last USING expression, and what it is read from.
    m = next(PAIR.finditer(src))
    assert [u.strip() for u in m["using"].split(",")][11:] == ["v_id_sequence"]
    assert "v_id_sequence := pg_catalog.pg_get_serial_sequence('messenger.realtime_outbox', 'id')::regclass;" in src


def test_the_id_arguments_are_held_to_their_place():
    src = routine(ID_ROUTINE)
    # Moved to another column, or used in another routine's twin: refused.
    moved = src.replace("(%3$skind, target_kind,", "(kind, %3$starget_kind,", 1)
    with pytest.raises(AssertionError, match="not where the outbox's id goes"):
        as_static(next(PAIR.finditer(moved)), ID_ROUTINE)
    with pytest.raises(AssertionError, match="alone"):
        as_static(next(PAIR.finditer(src)), "_reap_claim_lane")
    # Any other drift of the INSERT still fails.
    drifted = src.replace("SELECT %4$s$8,\n           $9,", "SELECT %4$s$9,\n           $8,", 1)
    assert drifted != src
    d = next(PAIR.finditer(drifted))
    with pytest.raises(AssertionError):
        assert as_static(d, ID_ROUTINE) == as_compared(d)


def test_the_comparison_sees_a_drift():
    # The check above must fail on a one-character drift of either text, or it checks nothing.
    src = routine("_reap_claim_lane")
    m = next(PAIR.finditer(src))
    drifted = src.replace("LIMIT $9", "LIMIT $8", 1)
    assert as_static(next(PAIR.finditer(drifted)), "_reap_claim_lane") != as_compared(m)
    drifted = src.replace("ORDER BY s.started_at\n         LIMIT p_limit",
                          "ORDER BY s.call_id\n         LIMIT p_limit", 1)
    d = next(PAIR.finditer(drifted))
    assert as_static(d, "_reap_claim_lane") != as_compared(d)
    loose = "UPDATE messenger.call_sessions SET status = 'x';"
    assert ACCESS.search(loose) and not ACCESS.search("v messenger.call_sessions.status%TYPE;")
