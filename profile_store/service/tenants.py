"""API keys: which tenant a key belongs to and which apps it may query, and operators' keys.

Tenants are configured in a JSON file::

    {
      "tenants": [
        {"name": "shop-co",
         "api_keys": [{"key_env": "SHOP_CO_API_KEY"}],
         "app_ids": ["com.shop", "com.shop|eu"]},
        {"name": "rival-inc",
         "api_keys": [{"key_file": "/run/secrets/rival-inc"}, "rival-inc-dev-5e4d3c2b1a09"],
         "app_id_prefixes": ["com.rival."]}
      ]
    }

``admin_api_keys`` (optional, top level): operators' keys, which may record erasure requests
(``POST /v1/admin/erasure-requests``) and nothing else; no tenant key is an admin key.

``name``: unique, for logs and messages. ``api_keys``: one or more keys (at least 16 characters;
several allow rotation), each belonging to exactly one tenant. A key is given as a reference, so
that the file itself holds no secret: ``{"key_env": "NAME"}`` (an environment variable of the
service) or ``{"key_file": "PATH"}`` (a file, e.g. a mounted secret, relative paths from the
tenants file's directory, its trailing newline stripped); a plain string or ``{"key": "..."}``
is the key itself, for development. A reference that gives no key stops the start with its
JSON path and the tenant, never with a key. ``app_ids``: the apps the tenant's queries may name;
``app_id_prefixes``: or every app whose id starts with one of these (a tenant with hundreds of
apps under its own namespace); at least one of the two, and every leaf of a query must name an
app they grant. A prefix is at least 3 characters, so that no prefix grants the apps of every
tenant. Keys are held only as SHA-256 digests in memory and are never written to a message or a
log. Any other field is an error, so a typo cannot widen access.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profile_store.audiences.query import Node, leaves

MIN_KEY_LENGTH = 16
TENANT_FIELDS = {"name", "api_keys", "app_ids", "app_id_prefixes"}
MIN_PREFIX_LENGTH = 3
KEY_SOURCES = ("key", "key_env", "key_file")


class TenantConfigError(ValueError):
    """An unusable tenants file; the message names the JSON path of the fault."""


class ForbiddenApp(Exception):
    """A query names an app outside the caller's tenant."""

    def __init__(self, path: str, app_id: str, tenant: str) -> None:
        super().__init__(f"{path}: tenant {tenant!r} may not query app {app_id!r}")
        self.path = path
        self.app_id = app_id
        self.tenant = tenant


@dataclass(frozen=True)
class Tenant:
    name: str
    app_ids: frozenset[str]
    app_id_prefixes: tuple[str, ...] = ()

    def may_query(self, app_id: str) -> bool:
        return app_id in self.app_ids or app_id.startswith(self.app_id_prefixes)

    def authorize(self, query: Node) -> None:
        """Raise ``ForbiddenApp`` for the first leaf naming an app this tenant may not query."""
        for leaf in leaves(query):
            if not self.may_query(leaf.app_id):
                raise ForbiddenApp(f"{leaf.path}.app_id", leaf.app_id, self.name)


def _digest(api_key: str) -> bytes:
    return hashlib.sha256(api_key.encode("utf-8", "surrogatepass")).digest()


class Tenants:
    """API key -> tenant, from the JSON configuration described in this module."""

    def __init__(self, tenants_by_key: dict[str, Tenant], admin_keys: tuple[str, ...] = ()) -> None:
        self._by_digest = {_digest(key): tenant for key, tenant in tenants_by_key.items()}
        self._admin_digests = frozenset(_digest(key) for key in admin_keys)
        self.names = sorted({tenant.name for tenant in tenants_by_key.values()})

    def __len__(self) -> int:
        return len(self.names)

    def authenticate(self, api_key: str | None) -> Tenant | None:
        """The tenant of ``api_key``, or None for a missing or unknown key."""
        if not api_key:
            return None
        return self._by_digest.get(_digest(api_key))

    def is_admin(self, api_key: str | None) -> bool:
        """An operator's key (``admin_api_keys``): erasure requests, nothing else."""
        if not api_key:
            return False
        return _digest(api_key) in self._admin_digests

    @classmethod
    def from_file(cls, path: str | Path, environ: Mapping[str, str] | None = None) -> Tenants:
        """The tenants of the JSON file at ``path``; ``key_env`` read from ``environ``
        (default: this process's environment), relative ``key_file`` paths from its directory."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise TenantConfigError(f"{path}: cannot read the tenants file: {exc}") from None
        try:
            config = json.loads(text)
        except ValueError as exc:
            raise TenantConfigError(f"{path}: not valid JSON: {exc}") from None
        try:
            return cls.from_config(config, environ, path.parent)
        except TenantConfigError as exc:
            raise TenantConfigError(f"{path}: {exc}") from None

    @classmethod
    def from_config(
        cls,
        config: Any,
        environ: Mapping[str, str] | None = None,
        base_dir: str | Path = ".",
    ) -> Tenants:
        keys = _KeyReader(os.environ if environ is None else environ, Path(base_dir))
        if not isinstance(config, dict) or "tenants" not in config:
            raise TenantConfigError('$: expected an object with the key "tenants"')
        unknown = sorted(set(config) - {"tenants", "admin_api_keys"})
        if unknown:
            raise TenantConfigError(f"$.{unknown[0]}: unknown field")
        entries = config["tenants"]
        if not isinstance(entries, list) or not entries:
            raise TenantConfigError("$.tenants: expected a non-empty list of tenants")
        by_key: dict[str, Tenant] = {}
        names: set[str] = set()
        for i, entry in enumerate(entries):
            path = f"$.tenants[{i}]"
            tenant, tenant_keys = _parse_tenant(entry, path, keys)
            if tenant.name in names:
                raise TenantConfigError(f"{path}.name: duplicate tenant name {tenant.name!r}")
            names.add(tenant.name)
            for j, key in enumerate(tenant_keys):
                if key in by_key:
                    raise TenantConfigError(
                        f"{path}.api_keys[{j}]: key already belongs to tenant {by_key[key].name!r}"
                    )
                by_key[key] = tenant
        admin_keys = []
        if "admin_api_keys" in config:
            admin_keys = keys.read_all(config["admin_api_keys"], "$.admin_api_keys", "admin keys")
            for j, key in enumerate(admin_keys):
                where = f"$.admin_api_keys[{j}]"
                if key in by_key:
                    raise TenantConfigError(
                        f"{where}: key already belongs to tenant {by_key[key].name!r}"
                    )
        return cls(by_key, tuple(admin_keys))


def _parse_tenant(entry: Any, path: str, keys: _KeyReader) -> tuple[Tenant, list[str]]:
    if not isinstance(entry, dict):
        raise TenantConfigError(f"{path}: expected an object")
    unknown = sorted(set(entry) - TENANT_FIELDS)
    if unknown:
        raise TenantConfigError(f"{path}.{unknown[0]}: unknown field")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise TenantConfigError(f"{path}.name: required, a non-empty string")
    api_keys = keys.read_all(entry.get("api_keys"), f"{path}.api_keys", f"tenant {name!r}")
    if "app_ids" not in entry and "app_id_prefixes" not in entry:
        raise TenantConfigError(f"{path}: needs app_ids, app_id_prefixes or both")
    app_ids = _strings(entry["app_ids"], f"{path}.app_ids") if "app_ids" in entry else []
    prefixes = (
        _strings(entry["app_id_prefixes"], f"{path}.app_id_prefixes")
        if "app_id_prefixes" in entry
        else []
    )
    for j, prefix in enumerate(prefixes):
        if len(prefix) < MIN_PREFIX_LENGTH:
            raise TenantConfigError(
                f"{path}.app_id_prefixes[{j}]: too short, prefixes have at least "
                f"{MIN_PREFIX_LENGTH} characters"
            )
    tenant = Tenant(name=name, app_ids=frozenset(app_ids), app_id_prefixes=tuple(prefixes))
    return tenant, api_keys


class _KeyReader:
    """The keys of an ``api_keys`` list: plain strings, or ``key``/``key_env``/``key_file``
    objects. Its errors name the JSON path, whose keys they are and the reference, never a key."""

    def __init__(self, environ: Mapping[str, str], base_dir: Path) -> None:
        self.environ = environ
        self.base_dir = base_dir

    def read_all(self, value: Any, path: str, owner: str) -> list[str]:
        if not isinstance(value, list) or not value:
            raise TenantConfigError(f"{path}: required, a non-empty list of keys")
        return [self.read(item, f"{path}[{i}]", owner) for i, item in enumerate(value)]

    def read(self, item: Any, path: str, owner: str) -> str:
        if isinstance(item, str) and item:
            return _long_enough(item, path)
        if not isinstance(item, dict) or len(item) != 1 or next(iter(item)) not in KEY_SOURCES:
            raise TenantConfigError(
                f"{path}: {owner}: expected a key, or an object with one of "
                + ", ".join(KEY_SOURCES)
            )
        ((source, reference),) = item.items()
        where = f"{path}.{source}: {owner}"
        if not isinstance(reference, str) or not reference:
            raise TenantConfigError(f"{where}: expected a non-empty string")
        if source == "key_env":
            if reference not in self.environ:
                raise TenantConfigError(f"{where}: environment variable {reference} is not set")
            key = self.environ[reference]
        elif source == "key_file":
            key = self._read_file(reference, where)
        else:
            key = reference
        if not key:
            raise TenantConfigError(f"{where}: the key is empty")
        return _long_enough(key, where)

    def _read_file(self, reference: str, where: str) -> str:
        """The key in the file, without its trailing newline."""
        try:
            return (self.base_dir / reference).read_text(encoding="utf-8").rstrip("\r\n")
        except UnicodeDecodeError:
            reason = "not UTF-8 text"
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
        raise TenantConfigError(f"{where}: cannot read {reference}: {reason}")


def _long_enough(key: str, where: str) -> str:
    if len(key) < MIN_KEY_LENGTH:
        raise TenantConfigError(
            f"{where}: too short, keys have at least {MIN_KEY_LENGTH} characters"
        )
    return key


def _strings(value: Any, path: str) -> list[str]:
    if not isinstance(value, list) or not value:
        raise TenantConfigError(f"{path}: required, a non-empty list of strings")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise TenantConfigError(f"{path}[{i}]: expected a non-empty string")
    return list(value)
