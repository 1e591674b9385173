"""Nothing is lost when a worker dies: a real ``svc`` process dispatching to a recording consumer
is killed with SIGKILL in the middle of dispatch, started again, and every event reaches the
consumer; only events that were not acknowledged are handed out twice.

The consumer (``tests/events/recording_consumer.py``) is loaded in the subprocess through
``SVC_PLUGINS_EXTRA``. On SQLite the process is ``svc serve`` (the embedded deployment's
dispatcher runs in its worker); with Redis it is ``svc worker``.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

from kernel.events import START
from kernel.testing import start_dispatching_process, until_in_process

EVENTS = 120
SITE = "kill-site"
WARM_SITE = "warm-site"  # one event the first process handles before it gets the real ones

# The lease bounds each delivery too: a batch that outlives it is cut short and handed out again,
# which the assertions below would see as a duplicate of an acknowledged event (first process)
# or as events out of order (second). The first process's is short, because the second waits
# for it to expire after the kill; it meets its batches warm (the warm-up event). The second
# process's is long: it is cold when its first batch comes, and nothing waits for its lease.
FIRST_LEASE, SECOND_LEASE = "2", "60"


def _start(data_dir: Path, record: Path, lease: str) -> subprocess.Popen[bytes]:
    return start_dispatching_process(data_dir, {
        "SVC_PLUGINS_EXTRA": "tests.events.recording_consumer", "SVC_TEST_RECORD_FILE": str(record),
        "SVC_TEST_RECORD_LINGER": "0.2", "SVC_EVENTS_BATCH": "10", "SVC_EVENTS_LEASE_SECONDS": lease,
        "SVC_EVENTS_POLL_SECONDS": "0.2"})


def _recorded(record: Path, site: str = SITE) -> list[int]:
    if not record.exists():
        return []
    lines = [line.split() for line in record.read_text().splitlines() if line.strip()]
    return [int(event_id) for site_id, event_id in lines if site_id == site]


async def _readable(kernel, count: int) -> list[int]:
    """The ids of the site's events once ``count`` are readable. On PostgreSQL an event becomes
    readable when no older transaction anywhere in the cluster is still open (the horizon), so
    another test's transaction can hold the last batch back for a moment."""
    for _ in range(200):
        found = [e.id for e in (await kernel.events.read_after(SITE, limit=1000)).events]
        if len(found) >= count:
            break
        await asyncio.sleep(0.05)
    assert len(found) == count
    return found


async def test_sigkill_mid_dispatch_loses_nothing(make_app, tmp_path):
    data_dir = tmp_path / "shared"
    app = await make_app(data_dir=data_dir, events_dispatch=False)
    kernel = app.kernel
    token = await app.login()
    resp = await app.client.post("/api/v1/sites", json={"id": SITE}, headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 201
    resp = await app.client.post("/api/v1/sites", json={"id": WARM_SITE}, headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 201
    record = tmp_path / "record.txt"

    first = _start(data_dir, record, FIRST_LEASE)
    try:
        async with kernel.unit_of_work(WARM_SITE) as uow:
            uow.emit("items.create", collection="posts", item_id="warm")
        await until_in_process(lambda: len(_recorded(record, WARM_SITE)) >= 1, first, data_dir)
        for start in range(0, EVENTS, 20):
            async with kernel.unit_of_work(SITE) as uow:
                for i in range(start, start + 20):
                    uow.emit("items.create", collection="posts", item_id=str(i))
        expected = await _readable(kernel, EVENTS)
        await until_in_process(lambda: len(_recorded(record)) >= 30, first, data_dir)
        first.send_signal(signal.SIGKILL)  # mid-dispatch: it lingers 0.2 s in every batch before its ack
        first.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
    before_restart = _recorded(record)
    state = await kernel.events.checkpoint(SITE, "recorder")
    acked = state["cursor"] if state else START
    assert len(before_restart) < EVENTS and acked.id < expected[-1]

    second = _start(data_dir, record, SECOND_LEASE)
    try:
        await until_in_process(lambda: set(_recorded(record)) >= set(expected), second, data_dir)
        done = await kernel.events.checkpoint(SITE, "recorder")
        for _ in range(200):  # the last batch's acknowledgement follows its recording
            if done and done["cursor"].id == expected[-1]:
                break
            await asyncio.sleep(0.05)
            done = await kernel.events.checkpoint(SITE, "recorder")
    finally:
        second.send_signal(signal.SIGTERM)
        try:
            second.wait(20)
        except subprocess.TimeoutExpired:
            second.kill()

    got = _recorded(record)
    assert set(got) == set(expected)  # every event reached the consumer
    duplicates = {i for i in got if got.count(i) > 1}
    assert all(i > acked.id for i in duplicates)  # only what was not acknowledged came twice
    assert sorted(got[len(before_restart):]) == got[len(before_restart):]  # in order after the restart
    assert done["cursor"].id == expected[-1]
