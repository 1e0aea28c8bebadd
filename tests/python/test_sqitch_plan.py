"""Sqitch plan lint: habits every change keeps, checked on the files, no database needed.

- every change in sqitch.plan has its deploy, revert and verify script, and no script is
  left over without a change;
- a change depends only on changes planned before it;
- deploy and revert scripts are one transaction (BEGIN first, COMMIT last), verify scripts
  BEGIN and end with ROLLBACK so they leave nothing behind;
- no script sets search_path for the session (a pinned function search_path, or SET LOCAL,
  is fine: a session-wide one leaks into every later script Sqitch runs on the connection);
- every SECURITY DEFINER routine pins its search_path in its own definition;
- the test map (CONTRIBUTING.md) has a row per change, in plan order, and every test it names exists
  and names or calls the change's object (see object_spellings);
- every released deploy script (of a change planned at or before the plan's latest tag) is
  byte for byte the one tests/released-deploy.sha256 lists, and the file lists nothing else: a
  deployed database never runs it again, so an edit would reach fresh deploys only (released
  revert scripts may change, CONTRIBUTING.md "Changing the schema"); so is every include (.psql) such a
  script runs. With no tag in the plan nothing is released and the file pins nothing. When a
  release is tagged (sqitch tag), the pins are written by
      .venv/bin/python tests/python/test_sqitch_plan.py --write-pins
  (write_released_deploy_pins() below, for release tooling);
- every include (.psql, a step several scripts share with psql \\ir) is run by a planned
  script, and is read as part of it by the checks above;
- the routine map of docs/design.md has a row for every routine the deploy scripts leave in
  place, and none for a routine they do not.
"""

import hashlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "sqitch.plan"
KINDS = ("deploy", "revert", "verify")


def plan_entries() -> list[tuple[str, str, list[str]]]:
    """(kind, name, dependencies) per plan line, kind 'change' or 'tag', in plan order."""
    entries = []
    for line in PLAN.read_text().splitlines():
        if not line.strip() or line.startswith(("%", "#")):
            continue
        if line.startswith("@"):
            entries.append(("tag", line.split()[0][1:], []))
            continue
        m = re.match(r"(\S+)\s+(?:\[([^\]]*)\]\s+)?\d{4}-", line)
        assert m, f"unparsable sqitch.plan line: {line}"
        entries.append(("change", m.group(1), (m.group(2) or "").split()))
    return entries


CHANGES = [name for kind, name, _ in plan_entries() if kind == "change"]


def script_stems() -> list[tuple[str, str]]:
    """(change, script path stem) per change in plan order. A change reworked later (sqitch
    rework) keeps its earlier scripts as name@TAG.sql, TAG being the first tag after it."""
    entries = plan_entries()
    stems = []
    for i, (kind, name, _) in enumerate(entries):
        if kind != "change":
            continue
        later = [j for j in range(i + 1, len(entries)) if entries[j][:2] == ("change", name)]
        if not later:
            stems.append((name, name))
            continue
        tags = [e[1] for e in entries[i + 1:later[0]] if e[0] == "tag"]
        assert tags, f"{name} is planned twice without a tag between (sqitch rework needs one)"
        stems.append((name, f"{name}@{tags[0]}"))
    return stems


STEMS = [stem for _, stem in script_stems()]
RELEASED_DEPLOY = ROOT / "tests" / "released-deploy.sha256"


def released_stems() -> list[str]:
    """The script stem of every change instance planned at or before the plan's latest tag, in
    plan order; none while the plan has no tag (nothing has been released)."""
    entries = plan_entries()
    tags = [i for i, e in enumerate(entries) if e[0] == "tag"]
    if not tags:
        return []
    released = {i for i in range(tags[-1]) if entries[i][0] == "change"}
    change_indexes = [i for i, e in enumerate(entries) if e[0] == "change"]
    return [stem for i, (_, stem) in zip(change_indexes, script_stems()) if i in released]


def statements(sql: str) -> list[str]:
    """The script without comments, split into rough statements (enough for first/last).
    psql meta-commands stand alone: a whole line from a backslash (\\if, \\endif, \\echo), or
    a trailing \\gset/\\gexec, which ends its query."""
    body = re.sub(r"--[^\n]*", "", sql)
    body = re.sub(r"(?m)^\s*(\\[a-z]+\b.*)$", r";\1;", body)
    body = re.sub(r"(\\g(?:set|exec))\b", r";\1;", body)
    return [s.strip() for s in body.split(";") if s.strip()]


INCLUDE = re.compile(r"(?m)^\\ir\s+(\S+\.psql)\s*$")


def with_includes(path: Path) -> str:
    """A script with the psql includes it runs (\\ir of a .psql file, beside it or below)
    spliced in where they stand: the lint reads what psql runs."""
    return INCLUDE.sub(lambda m: with_includes(path.parent / m.group(1)), path.read_text())


def includes_of(path: Path) -> set[Path]:
    """The .psql files a script runs, transitively."""
    found = set()
    for m in INCLUDE.finditer(path.read_text()):
        include = (path.parent / m.group(1)).resolve()
        found |= {include} | includes_of(include)
    return found


def transaction_statements(kind: str, change: str) -> list[str] | None:
    """The statements of a script that runs in one transaction, with its psql conditionals
    around it (the scheduler=none branch) and the \\set of variables its includes read left
    out; None for a script that says it runs without one (CREATE INDEX CONCURRENTLY cannot run
    in a transaction block)."""
    sql = with_includes(ROOT / kind / f"{change}.sql")
    if re.search(r"(?im)^-- no transaction\b", sql):
        return None
    stmts = statements(sql)
    if stmts and stmts[0].startswith("SELECT :'scheduler'"):
        # SELECT ... \gset, \if, [\echo], \else ... \endif around the transaction
        start = stmts.index("\\else") + 1
        assert stmts[-1] == "\\endif", f"{kind}/{change}.sql: a scheduler branch must close with \\endif"
        stmts = stmts[start:-1]
    # psql variables for an include, set before its first transaction: nothing runs on the server.
    while stmts and stmts[0].startswith("\\set "):
        stmts = stmts[1:]
    return stmts


def test_the_plan_has_changes():
    # Guards every parametrised test below against a parser that finds nothing.
    assert len(CHANGES) > 30 and len(set(STEMS)) == len(STEMS)


def test_a_reworked_change_requires_its_tagged_self():
    # What sqitch rework writes: the new instance requires name@TAG, so reverting it runs its
    # revert script, which is the tagged definition.
    deps = [d for kind, _, d in plan_entries() if kind == "change"]
    earlier: dict[str, str] = {}
    for (name, stem), requires in zip(script_stems(), deps):
        if name in earlier:
            assert earlier[name] in requires, f"the rework of {name} must require {earlier[name]}"
        earlier[name] = stem


@pytest.mark.parametrize("stem", STEMS)
def test_every_change_has_its_three_scripts(stem):
    missing = [k for k in KINDS if not (ROOT / k / f"{stem}.sql").is_file()]
    assert not missing, f"{stem}: no {', '.join(missing)} script"


def test_no_script_without_a_change():
    planned = set(STEMS)
    orphans = [str(p.relative_to(ROOT)) for k in KINDS for p in (ROOT / k).rglob("*.sql")
               if str(p.relative_to(ROOT / k).with_suffix("")) not in planned]
    assert not orphans


def test_every_include_is_run_by_a_planned_script():
    # A .psql file under deploy/, revert/ or verify/ is a step several scripts share (psql \\ir,
    # parameterised by psql variables), not a change: one that no planned script runs is as
    # stale as a script without a change.
    included = set().union(*(includes_of(ROOT / k / f"{stem}.sql") for k in KINDS for stem in STEMS))
    found = {p.resolve() for k in KINDS for p in (ROOT / k).rglob("*.psql")}
    assert included, "the lint sees no include: INCLUDE no longer matches the scripts' \\ir lines"
    assert not sorted(str(p.relative_to(ROOT)) for p in found - included)
    assert not sorted(str(p.relative_to(ROOT)) for p in included - found)


def test_dependencies_come_earlier_in_the_plan():
    seen: set[str] = set()
    late = []
    for kind, name, deps in plan_entries():
        late += [f"{name} needs {d}" for d in deps if d.lstrip("!") not in seen]
        seen.add(name)
        if kind == "tag":
            # A tag names every change before it: name@tag (what a rework requires).
            seen |= {f"{c}@{name}" for k, c, _ in plan_entries() if k == "change" and c in seen}
    assert not late


@pytest.mark.parametrize("kind,change", [(k, c) for c in STEMS for k in KINDS])
def test_script_is_one_transaction(kind, change):
    path = ROOT / kind / f"{change}.sql"
    if not path.is_file():
        pytest.fail(f"{path.relative_to(ROOT)} is missing")
    stmts = transaction_statements(kind, change)
    if stmts is None:
        # Said to run without a transaction: then it opens none either (a BEGIN there would
        # make its CREATE INDEX CONCURRENTLY fail).
        assert "BEGIN" not in [s.upper() for s in statements(path.read_text())], \
            f"{kind}/{change}.sql says it runs without a transaction but opens one"
        return
    end = "ROLLBACK" if kind == "verify" else "COMMIT"
    includes = [i for i, s in enumerate(stmts) if s.startswith("\\ir ")]
    if kind == "revert" and includes:
        # A reworked routine reverts by running its earlier version's deploy script (one
        # transaction, checked as such). Before it, at most one transaction of its own (dropping
        # a signature the earlier version does not have), or one it leaves open for that
        # script's COMMIT to end (dropping a routine the script CREATEs without OR REPLACE, in
        # the same transaction); after it, at most one transaction giving back the grants the
        # drop took. A stem reworked twice (name@tag) is itself such a revert of the version
        # before it.
        stems = [stem for name, stem in script_stems() if name == change.split("@")[0]]
        previous = stems[:stems.index(change)]
        assert previous and len(includes) == 1 and stmts[includes[0]] == f"\\ir ../../deploy/{previous[-1]}.sql", \
            f"revert/{change}.sql may only include its earlier deploy script, once"
        before, after = stmts[:includes[0]], stmts[includes[0] + 1:]
        if after:
            assert (after[0].upper(), after[-1].upper()) == ("BEGIN", "COMMIT") and all(
                s.upper().startswith("GRANT ") for s in after[1:-1]), \
                f"revert/{change}.sql may only give grants back after its earlier deploy script"
        if before:
            assert before[0].upper() == "BEGIN" and "COMMIT" not in [s.upper() for s in before[:-1]], \
                f"revert/{change}.sql may run one transaction of its own before its earlier deploy script"
        return
    assert stmts and stmts[0].upper() == "BEGIN", f"{kind}/{change}.sql must start with BEGIN;"
    assert stmts[-1].upper() == end, f"{kind}/{change}.sql must end with {end};"


ALL_SCRIPTS = sorted(str(p.relative_to(ROOT)) for k in KINDS for ext in ("*.sql", "*.psql")
                     for p in (ROOT / k).rglob(ext))


@pytest.mark.parametrize("script", ALL_SCRIPTS)
def test_no_session_wide_search_path(script):
    sql = re.sub(r"--[^\n]*", "", (ROOT / script).read_text())
    # A statement, not a routine's SET clause: the statement ends at its own semicolon
    # before any AS/BEGIN of a routine body.
    session_set = re.search(r"(?im)^\s*SET\s+(SESSION\s+)?search_path\b[^;$]*;", sql)
    set_config = re.search(r"(?i)set_config\(\s*'search_path'\s*,[^)]*,\s*false\s*\)", sql)
    assert not session_set and not set_config, f"{script} sets search_path for the session"


def routine_headers(sql: str) -> list[str]:
    """Each CREATE FUNCTION/PROCEDURE up to its body: where SECURITY DEFINER and SET live."""
    sql = re.sub(r"--[^\n]*", "", sql)
    return re.findall(r"(?is)CREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|PROCEDURE)\s.*?\bAS\s+\$", sql)


@pytest.mark.parametrize("change", STEMS)
def test_security_definer_pins_search_path(change):
    path = ROOT / "deploy" / f"{change}.sql"
    sql = path.read_text()
    assert not re.search(r"(?is)ALTER\s+(FUNCTION|PROCEDURE)[^;]*SECURITY\s+DEFINER", sql), \
        f"{change}: SECURITY DEFINER belongs in the routine's definition, beside its search_path"
    for header in routine_headers(sql):
        if re.search(r"(?i)SECURITY\s+DEFINER", header):
            assert re.search(r"(?i)\bSET\s+search_path\s*(=|TO)", header), \
                f"{change}: a SECURITY DEFINER routine without a pinned search_path: {header[:80]}"


def test_lint_sees_security_definer_routines():
    # The parser must find the definer routines this project has, or the test above is empty.
    definers = [c for c in CHANGES
                if any(re.search(r"(?i)SECURITY\s+DEFINER", h)
                       for h in routine_headers((ROOT / "deploy" / f"{c}.sql").read_text()))]
    assert "functions/reap_call_timeouts" in definers and len(definers) >= 4


ROUTINE_DDL = re.compile(
    r"(?is)\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|PROCEDURE)\s+(?:\"?\w+\"?\.)?\"?(\w+)"
    r"|\bDROP\s+(?:FUNCTION|PROCEDURE|ROUTINE)\s+(?:IF\s+EXISTS\s+)?([^;]*)")
DESIGN = ROOT / "docs" / "design.md"


def live_routines() -> set[str]:
    """The routines the deploy leaves in place: each latest deploy script (with its includes) in
    plan order, its CREATE FUNCTION/PROCEDURE statements adding a name and its DROPs removing
    the names they list, as they stand in the script."""
    live: set[str] = set()
    for change in CHANGES:
        sql = re.sub(r"--[^\n]*", "", with_includes(ROOT / "deploy" / f"{change}.sql"))
        for m in ROUTINE_DDL.finditer(sql):
            if m.group(1):
                live.add(m.group(1).lower())
                continue
            # name[(args)], ... [CASCADE | RESTRICT]: the last part of each dotted name
            targets = m.group(2)
            while re.search(r"\([^()]*\)", targets):
                targets = re.sub(r"\([^()]*\)", "", targets)
            targets = re.sub(r"(?i)\b(?:CASCADE|RESTRICT)\b|\"", "", targets)
            live -= {t.strip().split(".")[-1].lower() for t in targets.split(",") if t.strip()}
    return live


def design_routine_map() -> list[str]:
    """The routine of each row of the tables under docs/design.md's "The routines: a map":
    the backticked name before its argument list that opens the row."""
    section = DESIGN.read_text().split("\n## The routines: a map\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"(?m)^\| `(?:messenger\.)?(\w+)\(", section)


def test_the_routine_map_names_every_live_routine():
    # A newcomer finds a routine's caller, reads and writes in the map; a routine added without
    # a row, or a row left behind by a dropped or renamed routine, makes it describe another tree.
    live, mapped = live_routines(), design_routine_map()
    assert len(live) > 40 and len(mapped) > 40, "the parsers see no routines: check ROUTINE_DDL and the map's heading"
    missing = sorted(live - set(mapped))
    stale = sorted(set(mapped) - live)
    twice = sorted({n for n in mapped if mapped.count(n) > 1})
    assert not (missing or stale or twice), "docs/design.md, \"The routines: a map\": " + "; ".join(
        [f"no row for {n}" for n in missing] + [f"a row for {n}, which the deploy does not create" for n in stale]
        + [f"more than one row for {n}" for n in twice])


def contributing_test_map() -> list[tuple[str, list[str]]]:
    """(change, backticked words of its tests column) per row of CONTRIBUTING.md's test map."""
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    table = contributing.split("| change | tests |", 1)[1].split("\n## ", 1)[0]
    return [(m.group(1), re.findall(r"`([^`]+)`", m.group(2)))
            for m in re.finditer(r"^\| `([^`]+)` \|(.*)\|$", table, re.MULTILINE)]


def test_the_test_map_lists_every_change_in_plan_order():
    # The map from change to tests is how a newcomer finds the proof of an object:
    # a change added, removed or moved without it would leave the map describing another tree.
    assert [change for change, _ in contributing_test_map()] == CHANGES  # a reworked change: a row per place


def test_the_test_map_names_only_what_exists():
    """Every backticked word in the tests column is one of:

    - a test file: `*.sql` under tests/pgtap/, `*.py` under tests/python/, or a path from the
      repository root when it has a slash (`tests/managed/test_managed_deployer.py`); a `*` makes
      it a glob that must match at least one file (`claim_*_plan.sql`);
    - `make <target>`: a target of the Makefile;
    - `<module>.<name>`: a function defined in tests/python/<module>.py.

    Anything else is refused: say it in words outside the backticks. Every row names at least one
    test file, so each change's proof is found from its name.
    """
    makefile = (ROOT / "Makefile").read_text()
    stale = []
    for change, words in contributing_test_map():
        files = 0
        for word in words:
            if word.endswith((".sql", ".py")):
                folder = "tests/pgtap" if word.endswith(".sql") else "tests/python"
                base = ROOT if "/" in word else ROOT / folder
                found = any(p.is_file() for p in base.glob(word))
                files += found
            elif m := re.fullmatch(r"make ([\w-]+)", word):
                found = re.search(rf"(?m)^{re.escape(m.group(1))}:", makefile) is not None
            elif m := re.fullmatch(r"(\w+)\.(\w+)", word):
                module = ROOT / "tests" / "python" / f"{m.group(1)}.py"
                found = module.is_file() and re.search(
                    rf"(?m)^def {m.group(2)}\(", module.read_text()) is not None
            else:
                found = False
            if not found:
                stale.append(f"{change}: `{word}`")
        if not files:
            stale.append(f"{change}: names no test file")
    assert not stale


# What a change's tests must name (or call) so that the test map row is true. A change's object
# is the last part of its name, spelled as the tests spell it:
#   - functions/, procedures/, tables/, indexes/, types/, triggers/: the object's own name;
#   - roles/X: the role messenger_X, or its constant in tests/python/reaper_facts.py;
#   - cron/X: the pg_cron job: its name, its reaper_facts constant or call_reaper_job_name('key');
#   - grants/X: the table X, or the role messenger_X, whose grants it holds;
#   - triggers/X: also the table it is on (a write there fires it).
# "Calls" is static: a test file calls an object when it names a routine or table whose deploy
# script (its latest version) names that object, directly or through others (reap_call_timeouts
# reaches _reap_close through _reap_cycle, _reap_pair), and a table write fires
# the trigger functions triggers/ attaches to it. A pytest file is read with the local helper
# modules it imports (reaper_support's reap() calls reap_call_timeouts). It cannot tell whether
# a run reaches a branch: which tests do is the row's own business (e.g. _reap_first_passed runs
# only when a backlog lane passed a row-locked call). A test file named after the object names
# it (tables/call_sessions_autovacuum -> call_sessions_autovacuum.sql). Exceptions, each with its
# reason, are in OBJECT_EXCEPTIONS.
JOB_NAMES = {"call_reaper": ("reaper", "messenger-call-timeout-reaper"),
             "call_reaper_purge": ("purge", "messenger-call-reaper-purge"),
             "call_reaper_warden": ("warden", "messenger-call-reaper-warden")}
OBJECT_EXCEPTIONS = {
    # It checks the product's tables before anything is made: its tests name the tables it
    # checks, and read the refusal it raises.
    "requires/messenger_tables": ["call_sessions", "realtime_outbox"],
    # Likewise it checks the roles before anything is made: its tests name the roles.
    "requires/call_reaper_roles": ["OWNER_ROLE", "JOB_ROLE", "MONITOR_ROLE", "OPERATOR_ROLE"],
    # Options of the product's call_sessions, not an object of its own.
    "tables/call_sessions_autovacuum": ["autovacuum_vacuum_threshold", "autovacuum_vacuum_scale_factor",
                                        "call_sessions_autovacuum"],
    # The warden runs as its pg_cron job; a test that waits for that job (conftest's
    # warden_running) exercises both of its routines.
    "functions/_end_stale_call_reaper_lock": ["_end_stale_call_reaper_lock", "warden_running"],
    "procedures/run_call_reaper_warden": ["run_call_reaper_warden", "warden_running"],
}
HELPERS = ("reaper_support", "reaper_facts", "exporter_support", "adoption_support", "ha_cluster")


def reaper_facts_constants() -> dict[str, str]:
    """NAME -> value of the string constants of tests/python/reaper_facts.py."""
    text = (ROOT / "tests" / "python" / "reaper_facts.py").read_text()
    return dict(re.findall(r'(?m)^([A-Z_]+) = "([^"]+)"', text))


def latest_deploys() -> dict[str, str]:
    """Object name -> text of its latest deploy script (functions, procedures, tables, types,
    indexes); trigger functions are also reached from the table their trigger is on."""
    texts: dict[str, str] = {}
    for change in CHANGES:
        kind, name = change.split("/", 1)
        if kind in ("functions", "procedures", "tables", "types", "indexes"):
            texts[name] = texts.get(name, "") + (ROOT / "deploy" / f"{change}.sql").read_text()
    for change in CHANGES:
        kind, _ = change.split("/", 1)
        if kind == "triggers":
            sql = (ROOT / "deploy" / f"{change}.sql").read_text()
            for table, function in re.findall(r"(?is)\bON\s+messenger\.(\w+).*?EXECUTE\s+FUNCTION\s+messenger\.(\w+)", sql):
                texts[table] = texts.get(table, "") + f" messenger.{function}() "
    return texts


def reaches(name: str, texts: dict[str, str]) -> set[str]:
    """Every object whose name appears, transitively, in the deploy scripts from `name`."""
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        for other in re.findall(r"\bmessenger\.(\w+)", re.sub(r"--[^\n]*", "", texts.get(current, ""))):
            if other not in seen and other in texts:
                seen.add(other)
                todo.append(other)
    return seen


def object_spellings(change: str) -> list[str]:
    """Regexes, any of which names the change's object in a test file."""
    if change in OBJECT_EXCEPTIONS:
        return [rf"\b{re.escape(w)}\b" for w in OBJECT_EXCEPTIONS[change]]
    kind, name = change.split("/", 1)
    constants = reaper_facts_constants()
    values = []
    if kind in ("roles", "grants"):
        values.append(f"messenger_{name}")
    if kind == "cron":
        values.append(JOB_NAMES[name][1])
    spellings = [rf"(?<![\w-]){re.escape(v)}(?![\w-])" for v in values]
    spellings += [rf"\b{c}\b" for c, v in constants.items() if v in values]
    if kind == "cron":
        spellings.append(rf"call_reaper_job_name\('{JOB_NAMES[name][0]}'\)")
    if kind == "triggers":
        # A trigger fires on a write of its table.
        sql = (ROOT / "deploy" / f"{change}.sql").read_text()
        spellings += [rf"\b{t}\b" for t in re.findall(r"(?i)\bON\s+messenger\.(\w+)", sql)]
    if kind not in ("roles", "cron"):
        spellings.append(rf"\b{re.escape(name)}\b")
    return spellings


def text_with_includes(path: Path) -> str:
    """A test file with what it includes (pgTAP \\ir) or imports (local helper modules)."""
    text = path.read_text()
    if path.suffix == ".sql":
        for include in re.findall(r"(?m)^\\ir\s+(\S+)", text):
            text += (path.parent / include).read_text()
    else:
        for module in HELPERS:
            if re.search(rf"(?m)^(from|import) {module}\b", text):
                text += (ROOT / "tests" / "python" / f"{module}.py").read_text()
    return text


def test_every_test_the_map_names_names_its_object():
    """A row's test files each name or call the change's object (see object_spellings): a test
    listed for a change it never touches makes the map lie."""
    texts = latest_deploys()
    callers = {n: {m for m in texts if n in reaches(m, texts)} for n in texts}
    unrelated = []
    for change, words in contributing_test_map():
        spellings = object_spellings(change)
        name = change.split("/", 1)[1]
        spellings += [rf"\b{re.escape(c)}\b" for c in sorted(callers.get(name, ()))]
        for word in words:
            if not word.endswith((".sql", ".py")):
                continue
            folder = "tests/pgtap" if word.endswith(".sql") else "tests/python"
            base = ROOT if "/" in word else ROOT / folder
            for path in sorted(p for p in base.glob(word) if p.is_file()):
                if path.stem == name:
                    continue
                text = text_with_includes(path)
                if not any(re.search(s, text) for s in spellings):
                    unrelated.append(f"{change}: {path.relative_to(ROOT)}")
    assert not unrelated, "test map rows naming tests that never name or call the change's object: " + "; ".join(unrelated)


def test_object_spellings_see_what_they_must():
    # The spellings and the call graph must find the objects where they are used, or the test
    # above checks nothing.
    assert re.search(object_spellings("roles/call_reaper")[0], "GRANT x TO messenger_call_reaper;")
    assert not re.search(object_spellings("roles/call_reaper")[0], "messenger_call_reaper_owner")
    assert any(re.search(s, "login(JOB_ROLE)") for s in object_spellings("roles/call_reaper"))
    assert any(re.search(s, "call_reaper_job_name('purge')") for s in object_spellings("cron/call_reaper_purge"))
    assert not any(re.search(s, "messenger._reap_cycle_x()") for s in object_spellings("functions/_reap_cycle"))
    texts = latest_deploys()
    assert {"_reap_cycle", "_reap_pair", "_reap_claim", "_reap_close", "_reap_claim_lane"} <= reaches("reap_call_timeouts", texts)
    assert "_call_reaper_settings_guard" in reaches("call_reaper_settings", texts)
    assert "reap_call_timeouts" not in reaches("_reap_close", texts)


PINS_HEADER = """\
# The deploy scripts of every released change (planned at or before the plan's latest tag) and the
# includes they run, pinned: a deployed database never runs them again. Written by
#   .venv/bin/python tests/python/test_sqitch_plan.py --write-pins
# when a release is tagged; checked by tests/python/test_sqitch_plan.py. No tag, no pins.
"""


def released_deploy_files() -> list[Path]:
    """The deploy scripts of the released changes and every include they run, in plan order."""
    files: list[Path] = []
    for stem in released_stems():
        path = ROOT / "deploy" / f"{stem}.sql"
        for f in [path, *sorted(includes_of(path))]:
            if f.resolve() not in [g.resolve() for g in files]:
                files.append(f)
    return files


def released_deploy_pins() -> str:
    """What tests/released-deploy.sha256 holds for the plan as it is (sha256sum format)."""
    lines = [f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.resolve().relative_to(ROOT)}"
             for f in released_deploy_files()]
    return PINS_HEADER + "".join(line + "\n" for line in lines)


def write_released_deploy_pins() -> Path:
    """Pins the released deploy scripts: run once right after `sqitch tag`, and committed with
    the tag. Never to paper over an edit of a script already pinned (the test says which)."""
    RELEASED_DEPLOY.write_text(released_deploy_pins())
    return RELEASED_DEPLOY


def released_deploy_listing() -> dict[str, str]:
    """path -> sha256 from tests/released-deploy.sha256 (sha256sum lines; comments skipped)."""
    listed = {}
    for line in RELEASED_DEPLOY.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        digest, path = line.split(maxsplit=1)
        listed[path.strip()] = digest
    return listed


def test_the_pins_are_those_of_the_released_changes():
    # A pin of a change that is not released (no tag at or after it) would stop an ordinary edit;
    # a released script without a pin would go unchecked.
    listed = released_deploy_listing()
    want = {str(f.resolve().relative_to(ROOT)) for f in released_deploy_files()}
    assert sorted(set(listed) - want) == [], "pinned but not released (write the pins again after sqitch tag)"
    assert sorted(want - set(listed)) == [], "released but not pinned: .venv/bin/python tests/python/test_sqitch_plan.py --write-pins"


def test_released_deploy_scripts_are_unchanged():
    """A released change's scripts move to <name>@<tag>.sql when it is reworked, so a listed
    deploy/<name>.sql is also found there."""
    listed = released_deploy_listing()
    problems = []
    for stem in released_stems():
        path = f"deploy/{stem}.sql"
        before_rework = re.sub(r"@[^/]+$", "", path[:-4]) + ".sql"
        want = listed.get(path) or listed.get(before_rework)
        if want is not None and hashlib.sha256((ROOT / path).read_bytes()).hexdigest() != want:
            problems.append(f"{path} changed since its release: rework the change instead (sqitch rework)")
        # What a released deploy script includes is released with it: a changed step is a new
        # include that the rework's script runs, never an edit of one a release runs.
        for include in sorted(includes_of(ROOT / path)):
            rel = str(include.relative_to(ROOT))
            want = listed.get(rel)
            if want is not None and hashlib.sha256(include.read_bytes()).hexdigest() != want:
                problems.append(f"{rel} changed since its release (run by {path}): add a new include for the rework instead")
    assert not problems, "\n".join(problems)


if __name__ == "__main__":
    import sys
    if sys.argv[1:] != ["--write-pins"]:
        sys.exit("usage: tests/python/test_sqitch_plan.py --write-pins")
    print(f"{write_released_deploy_pins().relative_to(ROOT)}: {len(released_deploy_files())} released files pinned")
