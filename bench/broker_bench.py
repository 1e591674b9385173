"""What the node's local broker (kernel/workers/broker.py) costs a read and a write, in CPU.

- a read: ``FanoutGate.pending()``, the one check every request of a worker makes (an 8-byte
  read of the mapped generation file and a compare);
- a write: one ``PUBLISH`` on the bus channel answered by the broker (numbered, fanned out to
  ``--subscribers`` connections that read it), and one rate-limit hit (``slide``).

The broker runs on its own thread (``BrokerThread``, as under ``svc serve``) and the client on the
main loop, so the CPU per operation is of the whole process: client, broker and subscribers.

    .venv/bin/python bench/broker_bench.py --n 20000
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from kernel.workers.broker import BrokerClient, BrokerThread
from kernel.workers.fanout_gate import FanoutGate


def gate_ns(path: str, n: int) -> float:
    gate = FanoutGate(path)
    gate.pending()
    start = time.process_time()
    for _ in range(n):
        gate.pending()
    return (time.process_time() - start) / n * 1e9


async def round_trips(path: str, n: int, subscribers: int) -> tuple[float, float]:
    client = BrokerClient(path, gen_channels=("svc:bus",))
    listeners = [client.pubsub() for _ in range(subscribers)]
    for one in listeners:
        await one.subscribe("svc:bus")

    async def drain(one: object) -> None:
        got = 0
        while got < n:
            message = await one.get_message(ignore_subscribe_messages=True, timeout=5.0)  # type: ignore[attr-defined]
            if message is None:
                raise SystemExit("a subscriber missed messages")
            got += 1

    readers = [asyncio.create_task(drain(one)) for one in listeners]
    start = time.process_time()
    for _ in range(n):
        await client.publish("svc:bus", '{"event":"users.changed","payload":{"userId":"u1"}}')
    await asyncio.gather(*readers)
    publish = (time.process_time() - start) / n * 1e6
    start = time.process_time()
    for _ in range(n):
        await client.slide("bench", 10**9, 60_000)
    slide = (time.process_time() - start) / n * 1e6
    for one in listeners:
        await one.aclose()
    await client.aclose()
    return publish, slide


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--subscribers", type=int, default=2, help="bus listeners (one per other worker)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "broker.sock")
        broker = BrokerThread(path).start()
        try:
            read = gate_ns(path, args.n * 50)
            publish, slide = asyncio.run(round_trips(path, args.n, args.subscribers))
        finally:
            broker.stop()
    print(f"read  (gate check per request):        {read:8.0f} ns CPU")
    print(f"write (bus publish, {args.subscribers} listeners):      {publish:8.1f} us CPU")
    print(f"rate-limit hit (slide on the broker):  {slide:8.1f} us CPU")


if __name__ == "__main__":
    main()
