"""Stored secrets a start cannot open: refused before serving (docs/operations.md#encryption-keys).

Every column that holds ``kernel.secrets`` tokens is declared by its plugin through the
``register_sealed_columns`` hook. ``svc serve`` and ``svc worker`` look, once at start, for a
value in one of them that names a key not loaded (``sv1.<key id>.``): the key was lost or not
set (a PostgreSQL deployment without ``SVC_ENCRYPTION_KEY``, an embedded data dir restored
without its ``encryption_key`` file). Production refuses to start, naming the columns and how to
make a key, rather than fail every webhook delivery and sync later; development says it and starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import Column, and_, exists, not_, select

from kernel.base.errors import SettingsError
from kernel.base.secrets import ACTIVE_ENV, MORE_ENV, VERSION

if TYPE_CHECKING:
    from kernel.core.context import Kernel

MAKE_KEY = "python3 -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())'"


def sealed_columns(kernel: Kernel) -> list[Column[Any]]:
    """Every column the enabled plugins declare as holding sealed secrets."""
    return [column for group in kernel.pm.hook.register_sealed_columns(kernel=kernel) for column in group or ()]


def unopenable_columns(kernel: Kernel, conn: Any) -> list[str]:
    """``table.column`` of each declared column holding a token of a key that is not loaded."""
    loaded = kernel.secrets.key_ids
    found = []
    for column in sealed_columns(kernel):
        # LIKE with the key id: ids are letters, digits, '_' and '-', and '_' is LIKE's one-character
        # wildcard, which can only widen a match of a loaded id (a missing key then goes unnoticed
        # here, never the reverse); escaped so it cannot.
        opened = [column.like(f"{VERSION}.{kid.replace('_', '!_')}.%", escape="!") for kid in loaded]
        where = and_(column.like(f"{VERSION}.%"), *[not_(cond) for cond in opened])
        if conn.execute(select(exists().where(where))).scalar():
            found.append(f"{column.table.name}.{column.name}")
    return found


def check_sealed_keys(kernel: Kernel, conn: Any) -> str | None:
    """Raise ``SettingsError`` (production) or return a warning (development) when stored secrets
    were sealed with a key that is not loaded; None when every one opens."""
    found = unopenable_columns(kernel, conn)
    if not found:
        return None
    message = (f"stored secrets in {', '.join(found)} were sealed with an encryption key that is not loaded: "
               f"set {ACTIVE_ENV} (and {MORE_ENV} for older keys) to the key(s) they were sealed with"
               + ("" if kernel.secrets.available else f"; a new key is made with {MAKE_KEY}, but only the old "
                  "one opens what it sealed"))
    if kernel.settings.env == "development":
        return message + " (SVC_ENV=development: starting anyway; those features fail until then)"
    raise SettingsError(message)


def check_at_start(kernel: Kernel) -> None:
    """``svc serve`` and ``svc worker``: stop a production start whose stored secrets no loaded
    key opens; say it in development."""
    from kernel.app import database_url
    from kernel.base.logconfig import announce
    from kernel.db.engine import db_timeouts, sync_engine

    engine = sync_engine(database_url(kernel.settings), **db_timeouts(kernel.settings))
    try:
        with engine.connect() as conn:
            warning = check_sealed_keys(kernel, conn)
    finally:
        engine.dispose()
    if warning:
        announce(warning)
