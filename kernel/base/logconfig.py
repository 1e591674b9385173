"""Log configuration for the service processes: one format for svc's lines and uvicorn's.

``SVC_LOG_FORMAT=text`` (the default) writes ``<time> <LEVEL> <logger>: <message>``;
``SVC_LOG_FORMAT=json`` writes one JSON object a line (``time``, ``level``, ``logger``,
``message``, and ``exception`` with the traceback), for a log shipper. uvicorn's loggers
(``uvicorn``, ``uvicorn.error``) are given no handler of their own (``svc serve`` passes
``log_config=None``): their records reach the root handler set here, in every worker process,
because each imports ``kernel.asgi``, which calls ``configure_logging``. The command's own lines
(the data dir, the start line) go through ``announce``, in the same format.

httpx logs every request with its full URL (a query may hold a token) at INFO: its logger is
kept at WARNING, and ``kernel.base.outbound`` logs the method, the host and the status instead.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

_format = "text"


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC, ISO 8601), level, logger, message[, exception]."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname, "logger": record.name, "message": record.getMessage(),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def formatter(fmt: str) -> logging.Formatter:
    """The formatter of ``SVC_LOG_FORMAT`` (``text`` or ``json``)."""
    return JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT)


def configure_logging(level: str = "info", fmt: str = "text") -> None:
    """One line per record on stderr in ``fmt``, for svc's loggers and uvicorn's alike."""
    global _format
    root = logging.getLogger()
    if any(getattr(h, "_svc", False) for h in root.handlers):
        return
    _format = fmt
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(fmt))
    handler._svc = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):  # any handler uvicorn set: ours instead
        found = logging.getLogger(name)
        found.handlers.clear()
        found.propagate = True
    # Alembic says "Context impl SQLiteImpl" and lists its plugins on every start, migrating or not;
    # svc logs one line of its own when a migration changed something (kernel.cli.migrate).
    quiet = max(logging.WARNING, root.level)
    for name in ("alembic", "httpx", "httpcore"):
        logging.getLogger(name).setLevel(quiet)


def announce(line: str) -> None:
    """A line of the ``svc`` command's own on standard error: ``svc: <line>`` as text, a JSON
    record of the ``svc`` logger under ``SVC_LOG_FORMAT=json``."""
    if _format == "json":
        record = logging.LogRecord("svc", logging.INFO, __file__, 0, line, None, None)
        print(JsonFormatter().format(record), file=sys.stderr, flush=True)
    else:
        print(f"svc: {line}", file=sys.stderr, flush=True)
