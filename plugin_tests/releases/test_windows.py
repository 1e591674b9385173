"""Maintenance windows, directly: the parser and ``next_opening`` against a minute-by-minute
reference (hypothesis), across time zones with DST changes."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.base.errors import ApiError
from kernel.testing import examples
from plugins.releases.bodies import minutes, parse_window
from plugins.releases.windows import next_opening, validate_timezone

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"]


@st.composite
def windows(draw):
    out = []
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, 24 * 60 - 1))
        end = draw(st.integers(start + 1, 24 * 60))
        out.append({"dow": draw(st.integers(0, 6)), "start": f"{start // 60:02d}:{start % 60:02d}",
                    "end": "24:00" if end == 24 * 60 else f"{end // 60:02d}:{end % 60:02d}"})
    return {"windows": out}


def open_at(window, moment: dt.datetime, tz: ZoneInfo) -> bool:
    """The reference: local wall-clock minute inside some window of its weekday."""
    local = moment.astimezone(tz)
    dow, minute = (local.weekday() + 1) % 7, local.hour * 60 + local.minute
    return any(w["dow"] == dow and minutes(w["start"]) <= minute < minutes(w["end"]) for w in window["windows"])


@settings(max_examples=examples(100), deadline=None)
@given(window=windows(), zone=st.sampled_from(ZONES),
       now=st.datetimes(min_value=dt.datetime(2026, 1, 1), max_value=dt.datetime(2031, 1, 1)))
def test_next_opening_is_the_first_open_minute(window, zone, now):
    tz = ZoneInfo(zone)
    now = now.replace(second=0, microsecond=0, tzinfo=dt.UTC)
    assert parse_window(window) == window
    opening = next_opening(window, now, tz)
    assert opening >= now
    if opening == now:
        assert open_at(window, now, tz)
        return
    assert open_at(window, opening, tz), (opening, opening.astimezone(tz))
    # No open minute before it (windows start on whole minutes; the gap is at most a week).
    probe = now
    while probe < opening:
        assert not open_at(window, probe, tz), (probe, probe.astimezone(tz), opening)
        probe += dt.timedelta(minutes=1)


TRANSITIONS = [dt.datetime(2030, 3, 31, 1, tzinfo=dt.UTC),
               dt.datetime(2030, 10, 27, 1, tzinfo=dt.UTC), dt.datetime(2030, 3, 10, 7, tzinfo=dt.UTC),
               dt.datetime(2030, 11, 3, 6, tzinfo=dt.UTC)]


@settings(max_examples=examples(100), deadline=None)
@given(window=windows(), zone=st.sampled_from(["Europe/Berlin", "America/New_York"]),
       near=st.sampled_from(TRANSITIONS), shift=st.integers(-8 * 24 * 60, 60))
def test_next_opening_near_dst_changes(window, zone, near, shift):
    test_next_opening_is_the_first_open_minute.hypothesis.inner_test(
        window=window, zone=zone, now=(near + dt.timedelta(minutes=shift)).replace(tzinfo=None))


def test_no_window_means_now():
    now = dt.datetime(2030, 1, 2, 12, tzinfo=dt.UTC)
    assert next_opening(None, now, ZoneInfo("UTC")) == now


BERLIN = ZoneInfo("Europe/Berlin")


def utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=dt.UTC)


def test_windows_across_the_dst_changes():
    # Spring: Berlin's clock jumps from 02:00 to 03:00 at 01:00 UTC on Sunday 2030-03-31.
    spring = utc(2030, 3, 30, 12)
    assert next_opening({"windows": [{"dow": 0, "start": "02:00", "end": "04:00"}]}, spring, BERLIN) \
        == utc(2030, 3, 31, 1)
    # A window starting inside the skipped hour opens when the clock jumps into it.
    assert next_opening({"windows": [{"dow": 0, "start": "02:30", "end": "04:00"}]}, spring, BERLIN) \
        == utc(2030, 3, 31, 1)
    # A window wholly inside the skipped hour does not open that day, but a week later.
    assert next_opening({"windows": [{"dow": 0, "start": "02:00", "end": "02:30"}]}, spring, BERLIN) \
        == utc(2030, 4, 7, 0)
    # Autumn: 03:00 CEST becomes 02:00 CET at 01:00 UTC on Sunday 2030-10-27; 02:00-02:30 happens twice.
    window = {"windows": [{"dow": 0, "start": "02:00", "end": "02:30"}]}
    assert next_opening(window, utc(2030, 10, 26, 12), BERLIN) == utc(2030, 10, 27, 0)
    assert next_opening(window, utc(2030, 10, 27, 0, 10), BERLIN) == utc(2030, 10, 27, 0, 10)
    assert next_opening(window, utc(2030, 10, 27, 0, 40), BERLIN) == utc(2030, 10, 27, 1)


@pytest.mark.parametrize("value", ["", "Mars/Olympus", "UTC" * 30, 5, None])
def test_bad_time_zones(value):
    with pytest.raises(ValueError):
        validate_timezone(value)


@pytest.mark.parametrize("value", [
    {"windows": [{"dow": 1, "start": "1:00", "end": "02:00"}]},
    {"windows": [{"dow": 1, "start": "24:00", "end": "24:00"}]},
    {"windows": [{"dow": 1, "start": "10:00", "end": "10:00"}]},
    {"windows": [{"dow": -1, "start": "10:00", "end": "11:00"}]},
    {"windows": [{"dow": 1.0, "start": "10:00", "end": "11:00"}]},
    {"windows": [{"dow": 1, "start": "10:00"}]},
    {"windows": [{"dow": 1, "start": "10:00", "end": "11:00", "tz": "UTC"}]},
    {"windows": [], "extra": 1},
    [],
])
def test_bad_windows(value):
    with pytest.raises(ApiError) as caught:
        parse_window(value)
    assert caught.value.status == 422 and caught.value.code == "VALIDATION_FAILED"
