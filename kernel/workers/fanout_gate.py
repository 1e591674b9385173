"""The worker's side of the broker's numbering: hold a request until the bus has caught up.

The node's broker (``kernel/workers/broker.py``) numbers every message on the bus channel and writes the
number into an 8-byte file beside its socket (``<socket>.gen``) before it answers the publisher.
A worker maps that file and, before it answers a request, compares the number with the last bus
message it has handled: a cache drop made by a write on another worker is applied here before the
next request that depends on it is answered (docs/decisions/multi-worker-without-redis.md).
"""

from __future__ import annotations

import asyncio
import logging
import mmap
import os
import struct
from typing import Any

log = logging.getLogger("svc.broker")

GEN = struct.Struct("<Q")


def gen_path(socket_path: str) -> str:
    """The number file of the broker at ``socket_path``."""
    return socket_path + ".gen"


class FanoutGate:
    """Before a request is answered: every bus message the broker had numbered when the request
    arrived has been handled here (its cache drops applied).

    ``pending()`` is the hot path: one 8-byte read of the mapped generation file and a compare.
    """

    def __init__(self, socket_path: str, *, wait_seconds: float = 2.0) -> None:
        self.path = gen_path(socket_path)
        self.wait_seconds = wait_seconds
        self.applied = 0
        self.waits = 0
        self.timeouts = 0
        self._map: mmap.mmap | None = None
        self._changed: asyncio.Event | None = None

    def current(self) -> int:
        if self._map is None:
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:
                return 0
            try:
                self._map = mmap.mmap(fd, GEN.size, prot=mmap.PROT_READ)
            finally:
                os.close(fd)
        return int(GEN.unpack_from(self._map)[0])

    def pending(self) -> int:
        """The generation to wait for, or 0 when everything numbered is applied."""
        gen = self.current()
        return gen if gen > self.applied else 0

    def resync(self, gen: int) -> None:
        """A (re)subscription to the bus, confirmed at ``gen``: everything numbered up to it counts
        as applied (the caller dropped its caches), and the number file is mapped again (a broker
        that was started again made a new one, counting from zero)."""
        if self._map is not None:
            self._map.close()
            self._map = None
        self.applied = gen
        if self._changed is not None:
            self._changed.set()

    def applied_up_to(self, gen: int) -> None:
        if gen > self.applied:
            self.applied = gen
            if self._changed is not None:
                self._changed.set()

    async def wait_for(self, gen: int, drop_all: Any) -> None:
        """Wait (bounded) until ``gen`` is applied; past the bound, ``drop_all()`` (every cache a
        message could have dropped) and carry on: correct, only slower."""
        self.waits += 1
        if self._changed is None:
            self._changed = asyncio.Event()
        try:
            async with asyncio.timeout(self.wait_seconds):
                while self.applied < gen:
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            self.timeouts += 1
            log.warning("broker: bus message %d not received in %.1f s; dropping every site cache",
                        gen, self.wait_seconds)
            drop_all()
            self.applied_up_to(gen)
