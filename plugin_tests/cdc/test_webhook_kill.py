"""At least once through a crash: a real ``svc`` process delivering webhooks to a local
receiver is killed with SIGKILL in the middle of a delivery, started again, and the receiver
then holds every event id at least once, each delivery signed, in order after the restart."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from kernel.testing import start_dispatching_process, until_in_process
from plugin_tests.cdc.conftest import CDC_ENV
from plugin_tests.cdc.test_webhooks import SECRET, Endpoint, verify

EVENTS = 120
SITE = "webhook-kill"


def _start(data_dir: Path) -> subprocess.Popen[bytes]:
    return start_dispatching_process(data_dir, {
        **CDC_ENV, "SVC_CDC_WEBHOOK_BATCH": "10", "SVC_EVENTS_LEASE_SECONDS": "2",
        "SVC_EVENTS_POLL_SECONDS": "0.2"})


async def test_sigkill_mid_delivery_loses_nothing(make_app, tmp_path, http_receiver):
    data_dir = tmp_path / "shared"
    # This process writes and reads; only the killed one dispatches.
    app = await make_app(data_dir=data_dir, events_dispatch=False, env=CDC_ENV)
    kernel = app.kernel
    headers = {"Authorization": f"Bearer {await app.login()}"}
    assert (await app.client.post("/api/v1/sites", json={"id": SITE}, headers=headers)).status_code == 201
    endpoint = Endpoint(http_receiver, "/hook", delay=0.2)  # a kill lands inside a delivery
    resp = await app.client.post("/api/v1/cdc/subscriptions", headers={**headers, "X-Svc-Site": SITE}, json={
        "name": "hook", "kind": "webhook", "url": endpoint.url, "secret": SECRET})
    assert resp.status_code == 201
    for start in range(0, EVENTS, 20):
        async with kernel.unit_of_work(SITE) as uow:
            for i in range(start, start + 20):
                uow.emit("items.create", collection="posts", item_id=str(i))
    expected = {str(e.id) for e in (await kernel.events.read_after(SITE, limit=1000)).events}
    assert len(expected) == EVENTS

    first = _start(data_dir)
    try:
        await until_in_process(lambda: len(endpoint.got) >= 3, first, data_dir)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
    before_restart = len(endpoint.got)
    assert len(set(endpoint.event_ids())) < EVENTS

    second = _start(data_dir)
    try:
        await until_in_process(lambda: set(endpoint.event_ids()) >= expected, second, data_dir)
    finally:
        second.send_signal(signal.SIGTERM)
        try:
            second.wait(20)
        except subprocess.TimeoutExpired:
            second.kill()
    for request in endpoint.got:
        verify(request)
    assert set(endpoint.event_ids()) == expected
    for delivery in endpoint.deliveries():  # each delivery in log order
        ids = [int(e["id"]) for e in delivery["events"]]
        assert ids == sorted(ids) and len(ids) <= 10
    # Only what was not acknowledged came twice: the batch cut short (and at most one more whose
    # acknowledgement the kill beat).
    got = endpoint.event_ids()
    assert len(got) - len(set(got)) <= 20 and before_restart >= 3
