# Test harness for the call timeout reaper.
#   make deps   install what the tests need (Debian packages, .venv); idempotent
#   make test   deploy, check and test everything in throwaway clusters, four lines side by side
#               (test-main, test-deploys, test-realtime: 15 + pg_cron; then test-versions:
#               PostgreSQL 16-18, test-libpq, test-crossdb: pg_cron's other modes, one after
#               another); what .ci/run calls
#   make check  the fast tier (about 40 s on 2 cores): the Sqitch plan + test map lint (CONTRIBUTING.md) and the link check,
#               then in one PostgreSQL 15 + pg_cron cluster deploy, verify, plpgsql_check, pgTAP
#               (its partitioned file in a second database, on the partitioned stand-in)
#   make lint   ruff over the Python files
#   make clean  remove .venv and the stamp file
#   make dist   dist/call-timeout-reaper-<version>.tar.gz + .sha256: what a DBA installs (scripts/dist)
#   make release VERSION=x.y.z  changelog section, exporter version, plan tag, commit, git tag, dist
#   make bench  reaper vs app-side peer vs bare SQL, idle cost (sizes: see bench/bench.py --help)
#   make run-exporter  start the Prometheus exporter (call-reaper-exporter, see docs/exporter.md)
#   make alerts-test  promtool check + unit tests of monitoring/alerts.yml (part of test)
#   make unit-verify  systemd-analyze verify of monitoring/call-reaper-exporter.service (part of test)
# A fresh CI machine has none of the tools, so `test` installs them first.

SHELL := /bin/bash
.DEFAULT_GOAL := test

# Server, pg_cron, pg_partman (the stand-in's partitioned call_sessions), pgTAP + pg_prove, Sqitch (+ its
# Pg driver), plpgsql_check, promtool, Patroni + etcd for the failover test (python3-etcd:
# Patroni's etcd client, which apt would not pick if another DCS client happened to satisfy
# Patroni's dependency first), systemd-analyze (systemd) for the exporter's unit.
DEB_PACKAGES := postgresql-common postgresql-15 postgresql-15-cron postgresql-15-partman \
	postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl \
	sqitch libdbd-pg-perl postgresql-15-plpgsql-check prometheus \
	patroni etcd-server python3-etcd systemd

# CI runs as root; a developer who is not root needs sudo for apt-get.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

VENV  := .venv
# Inside .venv, so deleting .venv by hand also forces a reinstall.
STAMP := $(VENV)/.stamp-requirements-dev

# The server settings live in server.conf (also read by scripts/local-cluster and the failover
# test); here they become pg_virtualenv options, -o key=value, one per setting line.
SERVER_OPTIONS := $(shell sed -n 's/^\([a-z_.]*\) *= *\([^ \#]*\).*/-o \1=\2/p' server.conf)
# -t keeps the cluster in a temp dir even as root: a killed run then leaves nothing in
# /etc/postgresql that would make the next pg_virtualenv refuse to start.
PG_VIRTUALENV := pg_virtualenv -t -v 15 $(SERVER_OPTIONS)
# pg_cron in libpq mode (its default, fixed on Azure): jobs connect to cron.host as their own
# user; here the server's Unix socket directory (pg_virtualenv's), where tests/libpq adds the
# peer rule of docs/scheduling.md for the job role.
PG_VIRTUALENV_LIBPQ := $(PG_VIRTUALENV) -o cron.use_background_workers=off -o cron.host=/var/run/postgresql
# pg_cron kept in database postgres (Azure's default, fixed on Supabase), the product databases
# elsewhere: tests/crossdb (the later -o wins over server.conf's cron.database_name).
PG_VIRTUALENV_CROSSDB := $(PG_VIRTUALENV) -o cron.database_name=postgres

.PHONY: deps apt-deps test check lint clean bench run-exporter alerts-test unit-verify dist release

deps: apt-deps $(STAMP)

# Only touch apt when something is missing: `apt-get update` is the slow part.
# "Status: install ok installed", not just dpkg's exit code: a removed package whose
# config files remain is still known to dpkg -s.
apt-deps:
	@missing=""; \
	for p in $(DEB_PACKAGES); do \
	  dpkg -s "$$p" 2>/dev/null | grep -qx 'Status: install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "apt-get install:$$missing"; \
	  $(SUDO) apt-get update -q; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o Dpkg::Use-Pty=0 $$missing; \
	fi

# Rebuilt only when requirements-dev.txt or pyproject.toml is newer than the stamp. The
# exporter is installed editable, as `pip install .` would, so tests run its console script.
$(STAMP): requirements-dev.txt pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt
	$(VENV)/bin/pip install -q --disable-pip-version-check -e .
	touch $@

# Six stages, each in throwaway clusters of its own on a port of its own: PostgreSQL 16-18
# without pg_cron (scripts/test-versions), pg_cron in libpq mode, pg_cron in another database,
# and the PostgreSQL 15 + pg_cron suite in three clusters, each with its share of tests/python
# (scripts/test-in-cluster: main, deploys, realtime). Most of their time is spent waiting (on
# pg_cron's minute, on real time, on online index builds), so four lines run side by side
# (make -j), each printing its output whole when it ends (--output-sync=target). The cross-database
# stage waits on pg_cron 1.4's launcher, which falls minutes behind on a machine running all six
# at once: it runs last in its line, after PostgreSQL 16-18 and libpq, when the others are ending.
# With -k a failed stage lets the others finish (no cluster is left half torn down) and still
# fails make test.
TEST_STAGES := test-versions test-libpq test-crossdb test-main test-deploys test-realtime
test: deps alerts-test unit-verify
	@$(MAKE) --no-print-directory -k -j4 --output-sync=target test-main test-deploys test-realtime test-pg-cron-modes

# PostgreSQL 16-18, then the two pg_cron modes, one after another (make test's fourth line).
.PHONY: test-pg-cron-modes
test-pg-cron-modes:
	@$(MAKE) --no-print-directory -k test-versions test-libpq test-crossdb

# The stages on their own (make test runs them all; each needs `make deps`). Ports: 5432 main
# (pg_virtualenv's default), 5433 libpq, 5434 crossdb, 5435 deploys, 5436 realtime, 55416-55418
# PostgreSQL 16-18 (the failover test's Patroni nodes: 25432-25433).
.PHONY: $(TEST_STAGES)
test-versions:
	scripts/test-versions
test-libpq:
	$(PG_VIRTUALENV_LIBPQ) -c '-p 5433' env SUITE=libpq scripts/test-in-cluster
test-crossdb:
	$(PG_VIRTUALENV_CROSSDB) -c '-p 5434' env SUITE=crossdb scripts/test-in-cluster
test-main:
	$(PG_VIRTUALENV) scripts/test-in-cluster
test-deploys:
	$(PG_VIRTUALENV) -c '-p 5435' env SUITE=deploys scripts/test-in-cluster
test-realtime:
	$(PG_VIRTUALENV) -c '-p 5436' env SUITE=realtime scripts/test-in-cluster

# The lint needs no database, so it fails before a cluster is started; then scripts/test-in-cluster
# up to pgTAP (PGTAP= selects files as for make test). No pytest beyond the lint, no revert round
# trip, no PostgreSQL 16-18: make test stays the whole suite.
PLAN_LINT := tests/python/test_sqitch_plan.py tests/python/test_docs.py
check: deps
	$(VENV)/bin/python -m pytest $(PLAN_LINT) -q -p no:cacheprovider
	STOP_AFTER=pgtap $(PG_VIRTUALENV) scripts/test-in-cluster

# Needs no database: fails fast before a cluster is started.
alerts-test: apt-deps
	promtool check rules monitoring/alerts.yml
	promtool test rules monitoring/alerts_test.yml

# Serves /metrics on :9648; the database comes from DATABASE_URL or the PG* variables; flags in
# docs/exporter.md.
# EXPORTER_ARGS="--dsn postgresql://messenger_call_reaper_monitor@db/messenger --web.listen-address=:9648"
run-exporter: $(STAMP)
	$(VENV)/bin/call-reaper-exporter $(EXPORTER_ARGS)

dist: $(STAMP)
	scripts/dist

release: $(STAMP)
	scripts/release $(VERSION)

# systemd-analyze verify refuses a unit whose ExecStart is not installed, so it checks a temporary
# copy that runs this venv's console script instead of /opt's. It reports unknown keys only as
# warnings (exit 0): any output fails.
UNIT := monitoring/call-reaper-exporter.service
unit-verify: deps
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; unit=$$tmp/$$(basename $(UNIT)); \
	sed 's#^ExecStart=/opt/call-reaper-exporter/bin/#ExecStart=$(CURDIR)/$(VENV)/bin/#' $(UNIT) >"$$unit"; \
	grep -qx 'ExecStart=$(CURDIR)/$(VENV)/bin/call-reaper-exporter' "$$unit" || \
	  { echo "unit-verify: ExecStart of $(UNIT) is not /opt/call-reaper-exporter/bin/call-reaper-exporter"; exit 1; }; \
	out=$$(systemd-analyze verify "$$unit" 2>&1); rc=$$?; \
	if [ $$rc -ne 0 ] || [ -n "$$out" ]; then echo "$$out"; echo "unit-verify: $(UNIT) failed"; exit 1; fi; \
	echo "systemd-analyze verify $(UNIT): ok"

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis .pg

# ---- Local cluster ----------------------------------------------------------------------------
#   make run    installs what is missing, creates (once) and starts a persistent PostgreSQL 15 +
#               pg_cron in ./run on port 54329 (RUN_DIR, RUN_PGPORT to change), deploys with Sqitch,
#               starts the exporter if installed, then prints one line per reaper cycle (Ctrl-C)
#   make demo   insert sample calls into it and watch make run reap them
#   make stop   stop it (data kept); make clean also deletes it
.PHONY: run demo stop clean-run

run: deps
	@scripts/run-local

demo:
	@eval "$$(scripts/local-cluster env)" && psql -X -q -v ON_ERROR_STOP=1 -f sql/demo_calls.sql
	@echo "8 sample calls inserted: make run shows 5 missed and 2 failed within ~30 s"

stop:
	@scripts/local-cluster stop

clean-run:
	@scripts/local-cluster remove

clean: clean-run

# Its own throwaway cluster, with pg_stat_statements for the profile (never asked of a real
# server) and without autovacuum: the bench VACUUMs itself between measurements, and an
# autovacuum ANALYZE running meanwhile holds back the horizon so that VACUUM leaves the dead
# index entries of the previous contestant behind for the next one to walk (its after-drain part
# turns autovacuum on for itself). No timed checkpoint: the bench checkpoints before each
# contestant, so each pays the same full-page writes in its WAL bytes. The options after
# $(PG_VIRTUALENV)'s override its server.conf values (pg_createcluster keeps the last one).
# Sizes come from the environment: make bench HISTORY=1000000 IDLE_HISTORY=1000000,10000000
bench: deps
	$(PG_VIRTUALENV) \
		-o shared_preload_libraries=pg_cron,pg_stat_statements \
		-o autovacuum=off \
		-o checkpoint_timeout=30min \
		bench/in-cluster
