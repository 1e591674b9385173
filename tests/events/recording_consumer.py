"""A durable consumer for the worker-kill test, loaded in a ``svc`` subprocess through
``SVC_PLUGINS_EXTRA=tests.events.recording_consumer``.

It appends the id of every event it is handed to the file ``SVC_TEST_RECORD_FILE`` (one line
per event, flushed to disk before it returns), then lingers ``SVC_TEST_RECORD_LINGER``
seconds before acknowledging, so a kill lands between handling and acknowledging.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from kernel.base.settings import Setting, parse_float
from kernel.events import EventConsumer
from kernel.hooks.hookspecs import hookimpl

name = "recording_consumer"


@hookimpl
def register_settings() -> list[Setting]:
    return [Setting("SVC_TEST_RECORD_FILE", "", str, "Where the recording consumer writes event ids."),
            Setting("SVC_TEST_RECORD_LINGER", 0.0, parse_float(0.0), "Seconds it waits before acknowledging.")]


@hookimpl
def register_event_consumers(kernel: Any) -> list[EventConsumer]:
    path = kernel.settings.get("test_record_file")
    linger = kernel.settings.get("test_record_linger")

    async def record(kernel: Any, site_id: str, events: list[Any]) -> None:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("".join(f"{site_id} {e.id}\n" for e in events))
            fh.flush()
            os.fsync(fh.fileno())
        await asyncio.sleep(linger)

    return [EventConsumer("recorder", record)]
