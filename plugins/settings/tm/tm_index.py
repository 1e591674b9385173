"""The in-memory lookup index of one site's translation memory for one language pair.

A fuzzy lookup must not score every entry (100,000 of them take ~50 ms even in rapidfuzz's C
loop), so candidates come from a prefilter first:

1. **exact**: the normalised text (NFKC, case-folded, whitespace collapsed) in a dict: score 100.
2. **shared words**: an inverted index word -> entry slots. The query's words vote for the
   entries holding them, rarest word first, until ``VOTE_BUDGET`` votes are cast (common
   words, in most entries, say little and cost most; the rarest word always votes). Of the
   ``3 * CANDIDATES`` best-voted entries, the first ``CANDIDATES`` whose length can reach the
   threshold are scored.
3. **short texts**: a query of at most ``SHORT`` characters (one or two words, where a typo
   changes every word) is also scored against every entry in its length window, which the
   ``fuzz.ratio`` bound ``2 * min(la, lb) / (la + lb)`` makes small.

Scores are rapidfuzz's ``fuzz.ratio`` (normalised Indel similarity, 0-100) on normalised text.
The word prefilter can miss an entry that shares no word of use with the query; that entry
scores low on ``fuzz.ratio`` in practice, and bench/tm_bench.py measures the recall.

The index changes in place: ``upsert``/``remove`` for this worker's writes and the bus's
``tm.changed`` (ids only), and ``refresh`` reads what changed since its watermark when the
cache's TTL ran out (workers without Redis). A count that does not add up rebuilds it.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from array import array
from collections import Counter
from typing import Any

from rapidfuzz import fuzz, process

VOTE_BUDGET = 30_000
CANDIDATES = 400
SHORT = 24
WINDOW_SCAN_MAX = 20_000
_WORD = re.compile(r"\w+", re.UNICODE)
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """The form texts are matched in: NFKC, case-folded, whitespace collapsed."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def words(norm: str) -> set[str]:
    return set(_WORD.findall(norm))


def length_window(n: int, threshold: float) -> tuple[int, int]:
    """Lengths an entry may have to reach ``threshold`` against a query of ``n`` characters."""
    t = max(min(threshold, 100.0), 1.0)
    return int(n * t / (200 - t)), int(n * (200 - t) / t) + 1


class TMIndex:
    """Slots of (entry id, normalised text) with the prefilter structures; slots of removed
    entries are emptied, not reused, and skipped."""

    def __init__(self) -> None:
        self.ids: list[str | None] = []
        self.texts: list[str | None] = []
        self.slot_of: dict[str, int] = {}
        self.exact: dict[str, int] = {}
        # Arrays, not lists of ints: 100,000 entries hold about a million postings.
        self.postings: dict[str, array[int]] = {}
        self.lengths: array[int] = array("i")  # sorted text lengths, with ``slots`` in step
        self.slots: array[int] = array("i")  # may hold emptied slots
        self.watermark: Any = None  # the newest updated_at read
        self.dirty = False
        self.pending: set[str] = set()

    def __len__(self) -> int:
        return len(self.slot_of)

    @classmethod
    def build(cls, entries: list[tuple[str, str]]) -> TMIndex:
        """An index of ``(entry id, source text)`` pairs (one sort, not one insert each)."""
        index = cls()
        for entry_id, text in entries:
            index.upsert(entry_id, text, keep_sorted=False)
        order = sorted(range(len(index.slots)), key=index.lengths.__getitem__)
        index.lengths = array("i", (index.lengths[i] for i in order))
        index.slots = array("i", (index.slots[i] for i in order))
        return index

    def upsert(self, entry_id: str, source_text: str, *, keep_sorted: bool = True) -> None:
        if entry_id in self.slot_of:
            self.remove(entry_id)
        norm = normalise(source_text)
        slot = len(self.ids)
        self.ids.append(entry_id)
        self.texts.append(norm)
        self.slot_of[entry_id] = slot
        self.exact[norm] = slot
        for word in words(norm):
            posting = self.postings.get(word)
            if posting is None:
                self.postings[word] = array("i", (slot,))
            else:
                posting.append(slot)
        if keep_sorted:
            at = bisect.bisect_right(self.lengths, len(norm))
            self.lengths.insert(at, len(norm))
            self.slots.insert(at, slot)
        else:
            self.lengths.append(len(norm))
            self.slots.append(slot)

    def remove(self, entry_id: str) -> None:
        slot = self.slot_of.pop(entry_id, None)
        if slot is None:
            return
        norm = self.texts[slot]
        if norm is not None and self.exact.get(norm) == slot:
            del self.exact[norm]
        self.ids[slot] = None
        self.texts[slot] = None

    def _voted(self, query_words: set[str], lo: int, hi: int) -> list[int]:
        lists = sorted((self.postings[w] for w in query_words if w in self.postings), key=len)
        votes: Counter[int] = Counter()
        size = 0
        for posting in lists:  # rarest first, within the budget (the rarest always votes)
            if size and size + len(posting) > VOTE_BUDGET:
                break
            votes.update(posting)
            size += len(posting)
        texts = self.texts
        out = []
        for slot, _ in votes.most_common(CANDIDATES * 3):
            text = texts[slot]
            if text is not None and lo <= len(text) <= hi:
                out.append(slot)
                if len(out) >= CANDIDATES:
                    break
        return out

    def _window(self, lo: int, hi: int) -> list[int]:
        start = bisect.bisect_left(self.lengths, lo)
        end = bisect.bisect_right(self.lengths, hi)
        if end - start > WINDOW_SCAN_MAX:
            return []
        texts = self.texts
        return [slot for slot in self.slots[start:end] if texts[slot] is not None]

    def best(self, query: str, threshold: float) -> tuple[str, float] | None:
        """``(entry id, score)`` of the best entry scoring at least ``threshold``, or None."""
        norm = normalise(query)
        if not norm:
            return None
        slot = self.exact.get(norm)
        if slot is not None:
            return self.ids[slot], 100.0  # type: ignore[return-value]
        lo, hi = length_window(len(norm), threshold)
        slots = self._voted(words(norm), lo, hi)
        if len(norm) <= SHORT:
            slots = list(dict.fromkeys([*slots, *self._window(lo, hi)]))
        if not slots:
            return None
        found = process.extractOne(norm, [self.texts[s] for s in slots], scorer=fuzz.ratio,
                                   score_cutoff=threshold, processor=None)
        if found is None:
            return None
        _, score, position = found
        return self.ids[slots[position]], round(float(score), 2)  # type: ignore[return-value]
