"""gRPC adapter of KeyService: API keys over recallmesh.auth.keys.KeyStore.

The caller (already authenticated, with the admin scope, by recallmesh.auth.interceptors)
manages only keys its own grants cover, and cannot mint a key broader than itself."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import grpc

from recallmesh.auth.authenticator import Authenticator
from recallmesh.auth.interceptors import CALLER
from recallmesh.auth.keys import ApiKey, KeyStore, is_key_id
from recallmesh.auth.principal import parse_grant, parse_scopes
from recallmesh.shared.errors import InvalidArgument, NotFound, PermissionDenied
from recallmesh.v1 import keys_pb2, keys_pb2_grpc
from recallmesh.wire.timestamps import from_proto_timestamp, to_proto_timestamp

log = logging.getLogger(__name__)

MAX_NAME_CHARS = 128
MAX_GRANTS = 64


def key_to_proto(key: ApiKey) -> keys_pb2.ApiKey:
    msg = keys_pb2.ApiKey(id=key.id, name=key.name, namespaces=list(key.namespaces),
                          scopes=sorted(s.value for s in key.scopes), created_by=key.created_by)
    to_proto_timestamp(key.created_at, msg.created_at)
    for value, field in ((key.expires_at, msg.expires_at), (key.revoked_at, msg.revoked_at),
                         (key.last_used_at, msg.last_used_at)):
        if value is not None:
            to_proto_timestamp(value, field)
    return msg


def _name(raw: str) -> str:
    name = raw.strip()
    if not name:
        raise InvalidArgument("name is required")
    if len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise InvalidArgument(f"name must be 1..{MAX_NAME_CHARS} printable characters")
    return name


class KeyServicer(keys_pb2_grpc.KeyServiceServicer):
    def __init__(self, keys: KeyStore, authenticator: Authenticator) -> None:
        self.keys = keys
        self.authenticator = authenticator

    async def CreateApiKey(
        self, request: keys_pb2.CreateApiKeyRequest, context: grpc.aio.ServicerContext,
    ) -> keys_pb2.CreateApiKeyResponse:
        caller = CALLER.get()
        name = _name(request.name)
        if not request.namespaces:
            raise InvalidArgument("namespaces is required (exact names or prefix* patterns)")
        if len(request.namespaces) > MAX_GRANTS:
            raise InvalidArgument(f"namespaces holds at most {MAX_GRANTS} grants")
        grants = tuple(dict.fromkeys(parse_grant(g) for g in request.namespaces))
        scopes = parse_scopes(request.scopes)
        if not scopes:
            raise InvalidArgument("scopes is required (read, write, admin)")
        expires_at = None
        if request.HasField("expires_at"):
            expires_at = from_proto_timestamp(request.expires_at, "expires_at")
            if expires_at <= datetime.now(UTC):
                raise InvalidArgument("expires_at must be in the future")
        if not caller.covers(grants):
            raise PermissionDenied("a new key's namespaces must be within this credential's")
        if not scopes <= caller.scopes:
            raise PermissionDenied("a new key's scopes must be within this credential's")
        secret, key = await self.keys.create(name, grants, scopes, caller.subject, expires_at)
        log.info("API key created", extra={"key_id": key.id, "by": caller.subject,
                                           "namespaces": list(grants)})
        return keys_pb2.CreateApiKeyResponse(key=key_to_proto(key), secret=secret)

    async def ListApiKeys(
        self, request: keys_pb2.ListApiKeysRequest, context: grpc.aio.ServicerContext,
    ) -> keys_pb2.ListApiKeysResponse:
        caller = CALLER.get()
        keys = [k for k in await self.keys.list(request.include_revoked)
                if caller.covers(k.namespaces)]
        return keys_pb2.ListApiKeysResponse(keys=[key_to_proto(k) for k in keys])

    async def RevokeApiKey(
        self, request: keys_pb2.RevokeApiKeyRequest, context: grpc.aio.ServicerContext,
    ) -> keys_pb2.RevokeApiKeyResponse:
        caller = CALLER.get()
        key_id = request.id.strip()
        # an id of another form names no key: never sent to the database
        found = await self.keys.lookup(key_id) if is_key_id(key_id) else None
        if found is None or not caller.covers(found[0].namespaces):
            raise NotFound("no such API key")  # the same for one the caller may not see
        key = await self.keys.revoke(key_id)
        assert key is not None
        self.authenticator.forget(key_id)
        log.info("API key revoked", extra={"key_id": key_id, "by": caller.subject})
        return keys_pb2.RevokeApiKeyResponse(key=key_to_proto(key))
