"""--web.config.file: TLS and basic auth in the format of Prometheus' exporter-toolkit.

The same YAML as node_exporter's or postgres_exporter's ``--web.config.file``, so one file
(and one habit) serves every exporter on a host::

    tls_server_config:
      cert_file: server.crt          # relative paths are relative to this file's directory
      key_file: server.key
      client_ca_file: clients.crt    # optional, with client_auth_type
      client_auth_type: RequireAndVerifyClientCert
      min_version: TLS12             # TLS10..TLS13; exporter-toolkit's default TLS12
      max_version: TLS13
    basic_auth_users:
      prometheus: $2y$10$...         # bcrypt hash (htpasswd -nBC 10 "" | tr -d ':\\n')

Like exporter-toolkit, the file is read again for every connection (TLS) and every request
(basic auth): a renewed certificate or a changed password takes effect without a restart or a
signal. Whether TLS is on at all is decided at start. Keys exporter-toolkit knows but this
exporter cannot honour (cipher_suites, client_auth_type RequestClientCert, ...) are refused by
name rather than ignored: a setting that silently does nothing is a security hole.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import yaml


class WebConfigError(Exception):
    """The web config file cannot be used; the message says why, naming the file."""


_TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
# Python's ssl cannot ask for a client certificate without verifying it, so exporter-toolkit's
# RequestClientCert and RequireAnyClientCert have no honest equivalent here.
_CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
_TOP_KEYS = {"tls_server_config", "basic_auth_users"}
_TLS_KEYS = {"cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version",
             "max_version"}
# The modular-crypt form bcrypt writes: $2a$/$2b$/$2y$, a two-digit cost, 22 + 31 characters.
_BCRYPT = re.compile(r"\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}")


@dataclass(frozen=True)
class TLSConfig:
    cert_file: Path
    key_file: Path
    client_ca_file: Path | None
    client_auth: ssl.VerifyMode
    min_version: ssl.TLSVersion
    max_version: ssl.TLSVersion

    def context(self) -> ssl.SSLContext:
        """A server context with the certificate, key and client CAs as the files hold them now."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = self.min_version
        ctx.maximum_version = self.max_version
        try:
            ctx.load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as exc:
            raise WebConfigError(f"tls_server_config: cannot load cert_file {self.cert_file} "
                                 f"with key_file {self.key_file}: {_reason(exc)}") from None
        if self.client_ca_file is not None:
            try:
                ctx.load_verify_locations(cafile=self.client_ca_file)
            except (OSError, ssl.SSLError) as exc:
                raise WebConfigError(f"tls_server_config: cannot load client_ca_file "
                                     f"{self.client_ca_file}: {_reason(exc)}") from None
        ctx.verify_mode = self.client_auth
        return ctx


@dataclass(frozen=True)
class WebConfig:
    tls: TLSConfig | None
    users: dict[str, bytes]


def _reason(exc: Exception) -> str:
    return getattr(exc, "strerror", None) or getattr(exc, "reason", None) or str(exc)


def parse(path: Path) -> WebConfig:
    """The file's settings, checked; raises WebConfigError with the reason."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise WebConfigError(f"cannot read {path}: {_reason(exc)}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise WebConfigError(f"{path} is not valid YAML: {exc}") from None
    doc = {} if doc is None else doc
    if not isinstance(doc, dict):
        raise WebConfigError(f"{path}: expected a mapping at the top level")
    _only(doc, _TOP_KEYS, f"{path}")
    tls = _tls(doc.get("tls_server_config"), path)
    users = doc.get("basic_auth_users") or {}
    if not isinstance(users, dict):
        raise WebConfigError(f"{path}: basic_auth_users must map user names to bcrypt hashes")
    checked = {}
    for user, hashed in users.items():
        # A name containing ':' could never log in (the header splits at the first one).
        if not isinstance(user, str) or not user or ":" in user:
            raise WebConfigError(f"{path}: basic_auth_users: bad user name {user!r}")
        if not isinstance(hashed, str) or not _BCRYPT.fullmatch(hashed):
            raise WebConfigError(f"{path}: basic_auth_users: the password of {user!r} is not "
                                 "a bcrypt hash ($2y$<cost>$..., e.g. from htpasswd -nB)")
        checked[user] = hashed.encode()
    return WebConfig(tls, checked)


def _only(mapping: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(str(k) for k in mapping if k not in allowed)
    if unknown:
        raise WebConfigError(f"{where}: unknown or unsupported key(s) {', '.join(unknown)} "
                             f"(supported: {', '.join(sorted(allowed))})")


def _tls(section: object, path: Path) -> TLSConfig | None:
    if section is None:
        return None
    where = f"{path}: tls_server_config"
    if not isinstance(section, dict):
        raise WebConfigError(f"{where} must be a mapping")
    _only(section, _TLS_KEYS, where)
    for key in ("cert_file", "key_file"):
        if not section.get(key):
            raise WebConfigError(f"{where}: {key} is missing")

    def file(key: str) -> Path | None:
        value = section.get(key)
        return None if not value else path.parent / Path(str(value)).expanduser()

    def choice(key: str, table: dict, default: str):
        value = section.get(key) or default
        if value not in table:
            raise WebConfigError(f"{where}: {key} {value!r} is not one of "
                                 f"{', '.join(table)}")
        return table[value]

    client_ca = file("client_ca_file")
    client_auth = choice("client_auth_type", _CLIENT_AUTH, "NoClientCert")
    if client_auth != ssl.CERT_NONE and client_ca is None:
        raise WebConfigError(f"{where}: client_auth_type {section['client_auth_type']} needs "
                             "client_ca_file")
    if client_ca is not None and client_auth == ssl.CERT_NONE:
        # exporter-toolkit refuses this too: CAs that verify nobody look like protection.
        raise WebConfigError(f"{where}: client_ca_file is set but client_auth_type is "
                             "NoClientCert")
    min_version = choice("min_version", _TLS_VERSIONS, "TLS12")
    max_version = choice("max_version", _TLS_VERSIONS, "TLS13")
    if min_version > max_version:
        raise WebConfigError(f"{where}: min_version is above max_version")
    return TLSConfig(file("cert_file"), file("key_file"), client_ca, client_auth,
                     min_version, max_version)


class WebConfigFile:
    """The --web.config.file, read again at every use, with bcrypt results cached."""

    def __init__(self, path: str | Path):
        self.path = Path(path).absolute()
        self._checked: dict[bytes, bool] = {}
        self._lock = threading.Lock()
        self._dummy: bytes | None = None

    def load(self) -> WebConfig:
        return parse(self.path)

    def check(self) -> WebConfig:
        """load() plus the certificate and key really loaded: what the start refuses on."""
        config = self.load()
        if config.tls is not None:
            config.tls.context()
        return config

    def authorized(self, config: WebConfig, header: str | None) -> bool:
        """Whether the request's Authorization header satisfies basic_auth_users."""
        if not config.users:
            return True
        user, password = _basic_credentials(header)
        if user is None:
            return False
        hashed = config.users.get(user)
        # An unknown user costs one bcrypt check too, so timing does not tell which names exist.
        key = hashlib.sha256(b"\0".join((user.encode(), hashed or b"", password))).digest()
        with self._lock:
            cached = self._checked.get(key)
        if cached is None:
            if hashed is None:
                bcrypt.checkpw(password, self._dummy_hash())
                cached = False
            else:
                cached = bcrypt.checkpw(password, hashed)
            # bcrypt costs ~0.1 s a check on purpose; Prometheus sends the same credentials
            # every scrape. Keyed by a digest, so no password is kept in memory in the clear.
            with self._lock:
                if len(self._checked) > 1000:
                    self._checked.clear()
                self._checked[key] = cached
        return cached

    def _dummy_hash(self) -> bytes:
        if self._dummy is None:
            self._dummy = bcrypt.hashpw(b"call-reaper-exporter", bcrypt.gensalt(10))
        return self._dummy


def _basic_credentials(header: str | None) -> tuple[str | None, bytes]:
    scheme, _, encoded = (header or "").partition(" ")
    if scheme.lower() != "basic":
        return None, b""
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None, b""
    user, sep, password = decoded.partition(b":")
    if not sep:
        return None, b""
    try:
        return user.decode(), password
    except UnicodeDecodeError:
        return None, b""

