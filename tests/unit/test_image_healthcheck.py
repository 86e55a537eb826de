"""docker/healthcheck.py (the image's HEALTHCHECK) on the web console's container: it reads the
console's port from PID 1's command line (--port) or RECALLMESH_CONSOLE_PORT and asks its
/readyz; a 503 or nothing listening is unhealthy. The real console answers it in the image test
(docker/image_test.py); here a plain HTTP server stands in for its /readyz."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from recallmesh.stack.supervisor import free_port
from tests.helpers import image_healthcheck


class Readyz(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # http.server calls do_<method>
        ready = self.path == "/readyz" and self.server.ready  # type: ignore[attr-defined]
        body = b"ready" if ready else b"gateway: UNAVAILABLE"
        self.send_response(200 if ready else 503)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Readyz)
    httpd.ready = True  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_console_ready_on_the_port_of_its_command_line(server: ThreadingHTTPServer) -> None:
    check = image_healthcheck().main
    port = str(server.server_address[1])
    assert check(["recallmesh", "console", "--host", "127.0.0.1", "--port", port]) == 0
    server.ready = False  # type: ignore[attr-defined]
    assert check(["recallmesh", "console", "--port", port]) == 1


def test_console_port_from_its_setting(server: ThreadingHTTPServer,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    check = image_healthcheck().main
    monkeypatch.setenv("RECALLMESH_CONSOLE_PORT", str(server.server_address[1]))
    assert check(["recallmesh", "console"]) == 0
    monkeypatch.setenv("RECALLMESH_CONSOLE_PORT", str(free_port()))  # nothing listens there
    assert check(["recallmesh", "console"]) == 1
