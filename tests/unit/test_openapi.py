"""The HTTP/JSON API's OpenAPI document (recallmesh/http_api/openapi.py): what the protos give,
committed and served as it was generated, valid OpenAPI 3.1, every MemoryService method a
path whose schemas name exactly its messages' fields."""

from __future__ import annotations

from openapi_spec_validator import validate

from recallmesh.http_api import openapi
from recallmesh.http_api.transcode import METHODS


def test_the_committed_document_is_what_the_protos_give() -> None:
    assert openapi.OUT.read_text(encoding="utf-8") == openapi.text(), \
        "recallmesh/http_api/openapi.json is stale: run `make openapi`"


def test_the_document_is_valid_openapi_3_1() -> None:
    document = openapi.document()
    assert document["openapi"].startswith("3.1")
    validate(document)


def test_every_method_is_a_path_with_its_messages_fields() -> None:
    document = openapi.document()
    schemas = document["components"]["schemas"]
    assert set(document["paths"]) == {m.path for m in METHODS.values()}
    for method in METHODS.values():
        post = document["paths"][method.path]["post"]
        request = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        reply = post["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        for ref, message in ((request, method.request), (reply, method.response)):
            fields = {f.name for f in message.DESCRIPTOR.fields}
            assert set(schemas[ref.rsplit("/", 1)[1]]["properties"]) == fields, ref


def test_a_proto_comment_becomes_the_description() -> None:
    recall = openapi.document()["components"]["schemas"]["RecallRequest"]["properties"]
    assert "Number of hits" in recall["k"]["description"]
