"""Log configuration for the service processes."""

from __future__ import annotations

import logging
import sys


def configure_logging(level: str = "info") -> None:
    """One line per record on stderr with time, level, logger and message."""
    root = logging.getLogger()
    if any(getattr(h, "_svc", False) for h in root.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler._svc = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level.upper())
    # Alembic says "Context impl SQLiteImpl" and lists its plugins on every start, migrating or not;
    # svc logs one line of its own when a migration changed something (kernel.cli.migrate).
    logging.getLogger("alembic").setLevel(max(logging.WARNING, root.level))
