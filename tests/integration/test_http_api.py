"""The HTTP/JSON API (docs/http.md) through real HTTP: the front `recallmesh up` starts
(Stack.start_http) in front of the session's real gateway. docs/http.md's curl session runs as
written; every method is served and described; the gateway's keys and scopes hold; paging;
and bad input answered in words with the gRPC status's HTTP status."""

from __future__ import annotations

import re
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from recallmesh.http_api import openapi
from recallmesh.http_api.transcode import METHODS
from recallmesh.stack.supervisor import Stack
from tests.helpers import api_key

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SERVICE = "/recallmesh.v1.MemoryService"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def url(stack: Stack) -> Iterator[str]:
    yield stack.start_http(free_port())
    stack.stop_http()


def post(url: str, method: str, body: object, key: str | None,
         **headers: str) -> httpx.Response:
    sent = {"content-type": "application/json", **headers}
    if key is not None:
        sent["authorization"] = f"Bearer {key}"
    return httpx.post(f"{url}{SERVICE}/{method}", json=body, headers=sent, timeout=30)


def refused(reply: httpx.Response, status: int, code: str) -> str:
    assert reply.status_code == status, (reply.status_code, reply.text)
    body = reply.json()
    assert body["code"] == code and body["message"], body
    assert "Traceback" not in reply.text
    return str(body["message"])


def test_the_curl_session_runs_as_written(url: str, stack: Stack, tmp_path: Path) -> None:
    """docs/http.md's session, by bash in a folder whose .data/admin.key holds the stack's
    key; only the address is this test's. Its last call prints what the page says."""
    page = (ROOT / "docs" / "http.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"^```sh\n(.*?)^```", page, flags=re.MULTILINE | re.DOTALL)
    assert "API=http://localhost:8081/recallmesh.v1.MemoryService" in block
    ns = f"http-{uuid.uuid4().hex[:8]}"
    script = block.replace("http://localhost:8081", url).replace("http-demo", ns)
    (tmp_path / ".data").mkdir()
    (tmp_path / ".data" / "admin.key").write_text(stack.api_key + "\n")
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 5, done.stdout  # store, recall, list, delete, the refusal
    assert '"indexed": true' in lines[0] and "peanuts" in lines[1]
    assert '"next_page_token": ""' in lines[2] and '"deleted_at": "' in lines[3]
    said = re.search(r"The last call prints `(.*?)`", page.replace("\n", " "))
    assert said and lines[4] == said.group(1), (lines[4], said)
    with stack.client(namespace=ns) as client:
        assert client.count() == 0  # deleted through HTTP


def test_every_method_is_served_and_described(url: str, stack: Stack) -> None:
    index = httpx.get(url + "/", timeout=10).json()
    assert index["methods"] == {name: m.path for name, m in METHODS.items()}
    assert len(index["methods"]) == 15
    assert httpx.get(url + "/openapi.json", timeout=10).json() == openapi.document()
    assert httpx.get(url + "/healthz", timeout=10).status_code == 200
    assert httpx.get(url + "/readyz", timeout=10).status_code == 200
    # every method answers in JSON: the gateway's own refusal of an empty request at worst
    for name in METHODS:
        reply = post(url, name, {}, stack.api_key)
        assert reply.headers["content-type"].startswith("application/json"), name
        assert reply.status_code in (200, 400, 404), (name, reply.status_code, reply.text)


def test_the_gateways_keys_and_scopes_hold(url: str, stack: Stack) -> None:
    ns = f"http-{uuid.uuid4().hex[:8]}"
    store = {"namespace": ns, "memory": {"content": "The boat is moored at pier 7"}}
    missing = post(url, "Store", store, None)
    refused(missing, 401, "unauthenticated")
    assert missing.headers["www-authenticate"] == 'Bearer realm="recallmesh"'
    refused(post(url, "Store", store, "rmk_notakey_0123456789"), 401, "unauthenticated")
    reader = api_key(stack.dsn, grants=(ns,), scopes=("read",))
    refused(post(url, "Store", store, reader), 403, "permission_denied")
    assert post(url, "Store", store, stack.api_key).status_code == 200
    recalled = post(url, "Recall", {"namespace": ns, "query": "where is the boat?"}, reader)
    assert recalled.status_code == 200 and recalled.json()["degraded"] in (False, True)
    elsewhere = api_key(stack.dsn, grants=(f"{ns}-other",), scopes=("read", "write"))
    refused(post(url, "List", {"namespace": ns}, elsewhere), 403, "permission_denied")


def test_a_list_pages_and_fields_may_be_camel_case(url: str, stack: Stack) -> None:
    ns = f"http-{uuid.uuid4().hex[:8]}"
    with stack.client(namespace=ns) as client:
        for n in range(3):
            client.store(f"note number {n}")
    first = post(url, "List", {"namespace": ns, "pageSize": 2}, stack.api_key).json()
    assert len(first["memories"]) == 2 and first["next_page_token"]
    second = post(url, "List", {"namespace": ns, "page_size": 2,
                                "page_token": first["next_page_token"]}, stack.api_key).json()
    assert len(second["memories"]) == 1 and second["next_page_token"] == ""
    ids = {m["id"] for m in first["memories"] + second["memories"]}
    assert len(ids) == 3
    counted = post(url, "Count", {"namespace": ns}, stack.api_key).json()
    assert str(counted["count"]) == "3"  # 64-bit integers are strings in protobuf's JSON


def test_bad_input_is_answered_in_words(url: str, stack: Stack) -> None:
    key = stack.api_key
    ns = f"http-{uuid.uuid4().hex[:8]}"
    recall = f"{url}{SERVICE}/Recall"
    headers = {"content-type": "application/json", "authorization": f"Bearer {key}"}
    assert "not JSON" in refused(httpx.post(recall, content=b"{not json", headers=headers,
                                            timeout=10), 400, "invalid_argument")
    assert "JSON object" in refused(httpx.post(recall, content=b"[1, 2]", headers=headers,
                                               timeout=10), 400, "invalid_argument")
    assert "qury" in refused(post(url, "Recall", {"namespace": ns, "qury": "x"}, key), 400,
                             "invalid_argument")
    assert "query must not be empty" in refused(
        post(url, "Recall", {"namespace": ns, "query": " "}, key), 400, "invalid_argument")
    assert "k" in refused(post(url, "Recall", {"namespace": ns, "query": "x", "k": "many"},
                               key), 400, "invalid_argument")
    deep = b'{"namespace": ' + b'{"a": ' * 5000 + b"1" + b"}" * 5000 + b"}"
    refused(httpx.post(recall, content=deep, headers=headers, timeout=10), 400,
            "invalid_argument")
    refused(post(url, "Get", {"namespace": ns, "id": str(uuid.uuid4())}, key), 404, "not_found")
    assert "application/json" in refused(httpx.post(
        recall, content=b"{}", headers={**headers, "content-type": "text/plain"}, timeout=10),
        415, "invalid_argument")
    assert "GET / lists them" in refused(post(url, "Forget", {}, key), 404, "unimplemented")
    assert httpx.get(recall, timeout=10).status_code == 405
    big = b'{"namespace": "' + b"x" * (4 * 1024 * 1024) + b'"}'
    refused(httpx.post(recall, content=big, headers=headers, timeout=30), 413,
            "resource_exhausted")
    assert "connect-timeout-ms" in refused(post(url, "Recall", {"namespace": ns, "query": "x"},
                                                key, **{"connect-timeout-ms": "soon"}),
                                           400, "invalid_argument")
