"""The installed console script as SREs run every Prometheus exporter: the shared flags and their
environment variables, --version and build_info, logfmt/JSON logs, and --web.config.file (TLS
and basic auth in exporter-toolkit's format) over real HTTPS, reread without a restart. No test
here needs the database: the exporter is pointed at a closed port and serves up 0 beside
build_info."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
from importlib import metadata
from pathlib import Path

import pytest
from call_reaper_exporter import FLAGS, PREFIX, REMOVED_FLAGS
from exporter_support import REPO, bcrypt_hash, closed_port, make_certificates, sample

P = PREFIX
SCRIPT = Path(sys.executable).with_name("call-reaper-exporter")
# The version make deps installed from this tree: build_info and --version report it.
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
NO_DB = f"postgresql://nobody@127.0.0.1:{closed_port()}/messenger"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=30,
                          check=False, env=env)


def web_config(path: Path, certs: dict[str, Path] | None, users: dict[str, str]) -> Path:
    lines = []
    if certs:
        lines += ["tls_server_config:", f"  cert_file: {certs['server.crt'].name}",
                  f"  key_file: {certs['server.key'].name}"]
    if users:
        lines += ["basic_auth_users:"] + [f"  {u}: {bcrypt_hash(p)}" for u, p in users.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_version_and_help_show_the_shared_flags():
    version = run("--version")
    assert version.returncode == 0
    installed = metadata.version("call-timeout-reaper-exporter")
    assert installed == VERSION
    assert version.stdout.startswith(f"call-reaper-exporter, version {installed} (revision: ")
    helped = run("--help")
    assert helped.returncode == 0
    flat = " ".join(helped.stdout.split())
    for flag in ("--web.listen-address", "--web.telemetry-path", "--web.config.file",
                 "--version", "--log.level", "--log.format"):
        assert flag in flat
    for flag in FLAGS:
        assert f"env {flag.env};" in flat, flag.name


def test_docs_list_every_flag_with_its_environment_variable():
    doc = (REPO / "docs" / "exporter.md").read_text()
    for flag in FLAGS:
        assert f"| `{flag.name}` | `{flag.env}` |" in doc, flag.name


@pytest.mark.parametrize("old", sorted(REMOVED_FLAGS))
def test_removed_flags_name_their_replacement(old):
    done = run(old, "1")
    assert done.returncode == 2
    new = REMOVED_FLAGS[old].split("=")[0]
    assert f"{old} was removed in version 2.0.0: use {new}" in done.stderr


@pytest.mark.parametrize("args, message", [
    (["--web.listen-address", "9648"], "is not host:port"),
    (["--web.listen-address", ":70000"], "is not host:port"),
    (["--web.telemetry-path", "metrics"], "must start with /"),
    (["--log.level", "loud"], "choose one of debug, info, warn, error"),
    (["--log.format", "xml"], "choose one of logfmt, json"),
    (["--connect-timeout", "0"], "must be positive"),
])
def test_bad_flags_refuse_to_start(args, message):
    done = run(*args)
    assert done.returncode == 2
    assert message in done.stderr


def test_flags_come_from_the_environment_and_the_flag_wins(start_exporter):
    exporter = start_exporter("--dsn", NO_DB, "--log.level", "debug", env={
        "CALL_REAPER_EXPORTER_WEB_TELEMETRY_PATH": "/reaper-metrics",
        "CALL_REAPER_EXPORTER_LOG_FORMAT": "json",
        "CALL_REAPER_EXPORTER_LOG_LEVEL": "error",
        "CALL_REAPER_EXPORTER_REVISION": "0123abcd"})
    assert exporter.url.endswith("/reaper-metrics")
    samples, _ = exporter.scrape()
    assert sample(samples, P + "up") == 0
    assert sample(samples, P + "build_info", version=VERSION, revision="0123abcd",
                  pythonversion=sys.version.split()[0]) == 1
    with pytest.raises(urllib.error.HTTPError) as refused:
        exporter.get(exporter.url.replace("/reaper-metrics", "/metrics"))
    assert refused.value.code == 404
    exporter.stop()
    entries = [json.loads(line) for line in exporter.lines]
    assert {"ts", "level", "caller", "msg"} <= set(entries[0])
    # --log.level debug beat the environment's error: info and debug lines are there.
    assert {e["level"] for e in entries} >= {"info", "warn"}


def test_build_info_revision_unknown_without_a_recorded_commit(start_exporter):
    exporter = start_exporter("--dsn", NO_DB)
    samples, _ = exporter.scrape()
    # make deps installs from the working tree, where pip records no commit (PEP 610).
    assert sample(samples, P + "build_info", version=VERSION, revision="unknown",
                  pythonversion=sys.version.split()[0]) == 1
    assert f'msg="starting call-reaper-exporter" version={VERSION} revision=unknown' in exporter.log


def test_https_and_basic_auth_then_reread_without_restart(tmp_path, start_exporter):
    certs = make_certificates(tmp_path)
    config = web_config(tmp_path / "web.yml", certs, {"prometheus": "first-secret"})
    exporter = start_exporter("--dsn", NO_DB, "--web.config.file", str(config))
    assert exporter.url.startswith("https://")
    samples, _ = exporter.scrape(auth=("prometheus", "first-secret"), cafile=certs["ca"])
    assert sample(samples, P + "up") == 0
    assert sample(samples, P + "build_info", version=VERSION, revision="unknown",
                  pythonversion=sys.version.split()[0]) == 1

    for auth in (("prometheus", "wrong"), ("nobody", "first-secret"), None):
        with pytest.raises(urllib.error.HTTPError) as refused:
            exporter.get(auth=auth, cafile=certs["ca"])
        assert refused.value.code == 401
        assert refused.value.headers["WWW-Authenticate"].startswith("Basic ")
        assert P not in refused.value.read().decode()
    with pytest.raises((urllib.error.URLError, ConnectionError)):  # plain HTTP to TLS: no answer
        exporter.get(url=exporter.url.replace("https://", "http://"))

    # A new password and a new certificate (another CA) in place: the next request and the
    # next connection use them, with no restart and no signal.
    (tmp_path / "old").mkdir()
    newer = make_certificates(tmp_path / "old")
    for name in ("server.crt", "server.key"):
        newer[name].replace(certs[name])
    web_config(config, certs, {"prometheus": "second-secret"})
    with pytest.raises(urllib.error.URLError) as untrusted:
        exporter.get(auth=("prometheus", "second-secret"), cafile=certs["ca"])
    assert isinstance(untrusted.value.reason, ssl.SSLCertVerificationError)
    with pytest.raises(urllib.error.HTTPError) as refused:
        exporter.get(auth=("prometheus", "first-secret"), cafile=newer["ca"])
    assert refused.value.code == 401
    samples, _ = exporter.scrape(auth=("prometheus", "second-secret"), cafile=newer["ca"])
    assert sample(samples, P + "up") == 0

    # A file broken while running refuses requests (500) rather than serving unprotected.
    config.write_text("basic_auth_users:\n  prometheus: not-a-hash\n")
    with pytest.raises(urllib.error.URLError):
        exporter.get(auth=("prometheus", "second-secret"), cafile=newer["ca"])
    assert exporter.proc.poll() is None
    # The log is read from the exporter's stderr by a thread: the refused request can return
    # before the line arrives here, so wait for it rather than read once.
    exporter.wait_for_log("web config unusable", timeout=10)


def test_client_certificates_when_required(tmp_path, start_exporter):
    certs = make_certificates(tmp_path)
    config = tmp_path / "web.yml"
    config.write_text(f"tls_server_config:\n  cert_file: {certs['server.crt']}\n"
                      f"  key_file: {certs['server.key']}\n  client_ca_file: {certs['ca']}\n"
                      "  client_auth_type: RequireAndVerifyClientCert\n  min_version: TLS13\n")
    exporter = start_exporter("--dsn", NO_DB, "--web.config.file", str(config))
    with pytest.raises((urllib.error.URLError, ConnectionError, ssl.SSLError)):
        exporter.get(cafile=certs["ca"])
    context = ssl.create_default_context(cafile=str(certs["ca"]))
    context.load_cert_chain(certs["client.crt"], certs["client.key"])
    with urllib.request.urlopen(exporter.url, context=context, timeout=10) as response:
        assert P + "build_info" in response.read().decode()


@pytest.mark.parametrize("content, message", [
    (None, "cannot read"),
    ("basic_auth_users:\n  prometheus: hunter2\n", "is not a bcrypt hash"),
    ("tls_server_config:\n  key_file: server.key\n", "cert_file is missing"),
    ("tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n",
     "cannot load cert_file"),
    ("tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [x]\n",
     "unknown or unsupported key(s) cipher_suites"),
    ("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequestClientCert\n",
     "client_auth_type 'RequestClientCert' is not one of"),
    ("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: ca\n",
     "client_ca_file is set but client_auth_type is NoClientCert"),
    ("basic_auth_users: [\n", "is not valid YAML"),
])
def test_unusable_web_config_refuses_to_start_with_the_reason(tmp_path, content, message):
    path = tmp_path / "web.yml"
    if content is not None:
        path.write_text(content)
    done = run("--web.config.file", str(path), "--dsn", NO_DB)
    assert done.returncode == 2
    assert "--web.config.file: " in done.stderr
    assert message in done.stderr
    assert "hunter2" not in done.stderr
