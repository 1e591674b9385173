"""``RedisCircuit``: the one state of a Redis server that every Redis-backed part of a process
shares (``kernel.redisio.redis_fallback``). Pure: a hand-driven clock, no server; the parts' real
behaviour against a frozen Redis is in ``tests/test_hanging_dependencies.py``."""

from __future__ import annotations

import logging

from redis.exceptions import TimeoutError as RedisTimeoutError

from kernel.redisio.redis_fallback import RedisCircuit, RedisOutage


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def three_parts() -> tuple[Clock, RedisCircuit, RedisOutage, RedisOutage, RedisOutage]:
    clock = Clock()
    circuit = RedisCircuit(retry_seconds=1.0, probe_lease=5.0, clock=clock)
    return clock, circuit, circuit.part("cache", "memory"), circuit.part("bus", "this process"), \
        circuit.part("topics", "this process")


def test_one_parts_failure_takes_every_part_to_its_fallback_with_one_warning(caplog):
    clock, circuit, cache, bus, topics = three_parts()
    assert [cache.should_try(), bus.should_try(), topics.should_try()] == [True, True, True]
    with caplog.at_level(logging.INFO, logger="svc.redis"):
        cache.failed(RedisTimeoutError("Timeout reading from 127.0.0.1:6379"))
        clock.now += 0.5
        assert [cache.should_try(), bus.should_try(), topics.should_try()] == [False, False, False]
    assert [p.up for p in (cache, bus, topics)] == [False, False, False]
    assert (cache.failures, bus.failures, topics.failures) == (1, 0, 0)
    assert circuit.outages == 1 and circuit.probes == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["Redis unreachable for cache (TimeoutError: Timeout reading from 127.0.0.1:6379): "
                        "falling back to memory until it answers again; also for bus, topics, without "
                        "waiting for Redis"]
    assert bus.detail().startswith("degraded: Redis unreachable since ") and bus.detail().endswith(
        "using this process")


def test_one_probe_per_interval_from_whichever_part_comes_first_and_its_answer_counts_for_all(caplog):
    clock, circuit, cache, bus, topics = three_parts()
    cache.failed(RedisTimeoutError("timeout"))
    clock.now += 1.0
    assert bus.should_try() is True  # the probe
    assert [cache.should_try(), topics.should_try(), bus.should_try()] == [False, False, False]  # while it is out
    bus.failed(RedisTimeoutError("timeout"))  # still hung: another interval
    clock.now += 0.9
    assert topics.should_try() is False
    clock.now += 0.1
    assert topics.should_try() is True and cache.should_try() is False
    with caplog.at_level(logging.INFO, logger="svc.redis"):
        topics.succeeded()
    assert [p.up for p in (cache, bus, topics)] == [True, True, True]
    assert [cache.should_try(), bus.should_try(), topics.should_try()] == [True, True, True]
    assert circuit.probes == 2 and circuit.outages == 1 and (cache.failures, bus.failures) == (1, 1)
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert len(infos) == 1 and infos[0].startswith("Redis answers again for topics after ")
    assert infos[0].endswith("cache, bus, topics shared again")
    cache.failed(RedisTimeoutError("timeout"))  # a second outage is counted as such
    assert circuit.outages == 2


def test_a_probe_that_never_reports_stops_blocking_after_its_lease():
    clock, circuit, cache, bus, _ = three_parts()
    cache.failed(RedisTimeoutError("timeout"))
    clock.now += 1.0
    assert cache.should_try() is True  # its caller is cancelled and never reports
    clock.now += 4.9
    assert bus.should_try() is False
    clock.now += 0.1
    assert bus.should_try() is True and circuit.probes == 2


def test_a_probe_released_without_an_answer_lets_the_next_call_probe_at_once():
    clock, circuit, cache, bus, _ = three_parts()
    cache.failed(RedisTimeoutError("timeout"))
    clock.now += 1.0
    assert cache.should_try() is True
    cache.released()  # a bug or a cancellation, not Redis: no new interval
    assert bus.should_try() is True and circuit.up is False


def test_retry_seconds_changed_during_an_outage_applies_at_once():
    clock, circuit, cache, _, _ = three_parts()
    cache.failed(RedisTimeoutError("timeout"))
    cache.retry_seconds = 60.0  # the part's setting is the circuit's
    clock.now += 30
    assert circuit.retry_seconds == 60.0 and cache.should_try() is False
    cache.retry_seconds = 0.0
    assert cache.should_try() is True


def test_a_part_without_a_circuit_has_its_own_and_a_part_made_again_replaces_the_old():
    alone, other = RedisOutage("cache", "memory"), RedisOutage("bus", "this process")
    alone.failed(RedisTimeoutError("timeout"))
    assert alone.up is False and other.up is True and alone.circuit is not other.circuit
    circuit = RedisCircuit()
    first = circuit.part("realtime connections", "per-process counts")
    again = circuit.part("realtime connections", "per-process counts")
    assert circuit.parts == [again] and first is not again
