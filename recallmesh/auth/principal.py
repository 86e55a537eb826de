"""A verified caller and the rule of what it may touch, written once.

A caller holds namespace *grants* and *scopes*:

- A grant is an exact namespace (``acme-alice``) or a prefix pattern ending in ``*``
  (``acme-*`` covers every namespace starting with ``acme-``; ``*`` covers all).
- A scope is ``read``, ``write`` or ``admin`` (which methods need which:
  recallmesh.auth.interceptors.METHOD_SCOPES; admin also manages API keys within the caller's
  own grants).
  Scopes do not imply each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from recallmesh.shared.errors import InvalidArgument, PermissionDenied
from recallmesh.wire import validation


class Scope(StrEnum):
    READ = "read"
    WRITE = "write"
    ADMIN = "admin"


ALL_SCOPES = frozenset(Scope)
WILDCARD = "*"


def parse_scopes(values: Iterable[str], name: str = "scopes") -> frozenset[Scope]:
    """Scope names (case-insensitive) to Scopes; InvalidArgument naming an unknown one."""
    scopes = set()
    for raw in values:
        value = raw.strip().lower()
        if not value:
            continue
        try:
            scopes.add(Scope(value))
        except ValueError:
            raise InvalidArgument(f"{name}: unknown scope {raw[:32]!r} (known: "
                                  f"{', '.join(s.value for s in Scope)})") from None
    return frozenset(scopes)


def parse_grant(raw: str, name: str = "namespaces") -> str:
    """One grant: ``*``, a prefix pattern ``<prefix>*`` or an exact namespace, each checked
    against the namespace charset (NFC, printable)."""
    text = raw.strip()
    if text == WILDCARD:
        return WILDCARD
    if text.endswith(WILDCARD):
        return validation.namespace(text[:-1], name) + WILDCARD
    return validation.namespace(text, name)


def grant_matches(grant: str, namespace: str) -> bool:
    if grant.endswith(WILDCARD):
        return namespace.startswith(grant[:-1])
    return grant == namespace


def grant_covers(outer: str, inner: str) -> bool:
    """Whether every namespace `inner` grants is granted by `outer`."""
    if outer.endswith(WILDCARD):
        return inner.startswith(outer[:-1])
    return not inner.endswith(WILDCARD) and outer == inner


@dataclass(frozen=True)
class Principal:
    """A verified caller. `subject` names it in logs and audit (never a secret)."""

    subject: str
    grants: tuple[str, ...]
    scopes: frozenset[Scope]
    kind: str = "api_key"  # api_key | jwt | local (authentication off)
    key_id: str = ""

    @property
    def writer(self) -> str:
        """Who wrote a memory, as memories.written_by records it (migration 0018): the API
        key's id (a key renamed or a name reused is not another writer), the JWT's subject, or
        "local"."""
        if self.kind == "local":
            return "local"
        return f"{self.kind}:{self.key_id or self.subject}"

    def allows(self, namespace: str) -> bool:
        return any(grant_matches(g, namespace) for g in self.grants)

    def covers(self, grants: Iterable[str]) -> bool:
        """Whether this caller's grants cover every one of `grants` (it may hand them on)."""
        return all(any(grant_covers(mine, g) for mine in self.grants) for g in grants)

    def require(self, scope: Scope, namespace: str | None = None) -> None:
        """PERMISSION_DENIED unless this caller holds `scope` and (when given) is granted
        `namespace`. The wording names only what the caller asked for."""
        if scope not in self.scopes:
            raise PermissionDenied(f"this credential lacks the {scope.value!r} scope")
        if namespace is not None and not self.allows(namespace):
            raise PermissionDenied(f"this credential is not granted namespace {namespace!r}")


# The caller when authentication is off (RECALLMESH_AUTH=off): everything, everywhere.
UNAUTHENTICATED_LOCAL = Principal("local (authentication off)", (WILDCARD,), ALL_SCOPES,
                                  kind="local")
