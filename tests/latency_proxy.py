"""A TCP proxy on localhost that adds a fixed delay to everything the server sends back: a
database `delay_s` further away, for every round trip, whatever the machine is doing."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator

import psycopg


class LatencyProxy:
    def __init__(self, host: str, port: int, delay_s: float) -> None:
        self.host, self.port, self.delay_s = host, port, delay_s
        self.listen_port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="latency-proxy", daemon=True)
        self._stop: asyncio.Event | None = None

    def _run(self) -> None:
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._connect, "127.0.0.1", 0)
        self.listen_port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    async def _connect(self, client_r: asyncio.StreamReader,
                       client_w: asyncio.StreamWriter) -> None:
        try:
            if self.host.startswith("/"):  # libpq's socket directory
                server_r, server_w = await asyncio.open_unix_connection(
                    f"{self.host}/.s.PGSQL.{self.port}")
            else:
                server_r, server_w = await asyncio.open_connection(self.host, self.port)
        except OSError:
            client_w.close()
            return
        with contextlib.suppress(asyncio.CancelledError):  # stop(): ends quietly
            await asyncio.gather(self._copy(client_r, server_w, 0.0),
                                 self._copy(server_r, client_w, self.delay_s),
                                 return_exceptions=True)

    async def _copy(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    delay_s: float) -> None:
        """Copy reader to writer, each chunk `delay_s` after it arrived, in order."""
        loop = asyncio.get_running_loop()
        chunks: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def send() -> None:
            while True:
                due, data = await chunks.get()
                if not data:
                    break
                await asyncio.sleep(max(due - loop.time(), 0.0))
                writer.write(data)
                await writer.drain()

        sender = asyncio.ensure_future(send())
        try:
            while data := await reader.read(65536):
                chunks.put_nowait((loop.time() + delay_s, data))
        finally:
            chunks.put_nowait((0.0, b""))
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await sender
            writer.close()

    def start(self) -> LatencyProxy:
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


@contextlib.contextmanager
def distant_dsn(dsn: str, delay_s: float) -> Iterator[str]:
    """`dsn` reached through a LatencyProxy: every round trip `delay_s` longer."""
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    proxy = LatencyProxy(str(info.get("host") or "localhost"), int(info.get("port") or 5432),
                         delay_s).start()
    try:
        yield psycopg.conninfo.make_conninfo(dsn, host="127.0.0.1", port=str(proxy.listen_port))
    finally:
        proxy.stop()
