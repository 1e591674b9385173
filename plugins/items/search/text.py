"""Text for full-text search: diacritics folding, tokens, query terms and highlight snippets.

Pure functions, no I/O. Both databases index the *same* tokens, produced here: the text is
folded (``fold``), split into words of letters and digits (``tokens``), and only those words
reach SQLite's FTS5 or PostgreSQL's tsvector. Neither database's own parser decides what a
word is, so the two dialects match the same items, and a PostgreSQL cluster created with the
``C`` locale (whose text-search parser ignores non-ASCII letters) behaves like any other.

Folding uses the standard library only (ARCHITECTURE: not unidecode, which is GPL): special
letters that do not decompose (``đ`` ``ø`` ``ł`` ``ß`` ...) are mapped first, then the text is
case-folded, decomposed (NFKD) and stripped of combining marks, so ``Phở bò Hà Nội`` indexes
as ``pho bo ha noi``.
"""

from __future__ import annotations

import html
import math
import re
import sys
import unicodedata
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate

# Letters that carry their "diacritic" in the base character, so NFKD leaves them alone.
SPECIAL = str.maketrans({
    "đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "ø": "o", "Ø": "O", "ł": "l", "Ł": "L", "ß": "ss", "ẞ": "SS",
    "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "þ": "th", "Þ": "TH", "ı": "i", "ħ": "h", "Ħ": "H",
    "ŀ": "l", "Ŀ": "L", "ŧ": "t", "Ŧ": "T", "ƀ": "b", "ɨ": "i", "ʉ": "u",
})
# A word: a run of letters and digits (``_`` separates, as in FTS5's unicode61 tokenizer).
WORD = re.compile(r"[^\W_]+")
MAX_TOKEN = 64  # longer "words" (hashes, base64) are cut, on both sides alike
MAX_INDEXED_CHARS = 100_000  # of one field value; PostgreSQL caps a tsvector at 1 MB
MAX_TERMS = 16  # words of a query beyond these are ignored (each one is a sub-query)
SNIPPET_CHARS = 160
SNIPPET_LEAD = 50
HIGHLIGHT_SCAN = 20_000  # highlights look for a match in the first characters of a value


@lru_cache(maxsize=1)
def _drop_combining() -> dict[int, None]:
    """A ``str.translate`` table deleting every combining mark (built once, ~0.1 s): far
    faster than testing ``unicodedata.combining`` character by character in Python."""
    return {c: None for c in range(sys.maxunicode + 1) if unicodedata.combining(chr(c))}


def fold(text: str) -> str:
    """``text`` lower-cased without diacritics (``Phở Đà`` -> ``pho da``)."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.translate(SPECIAL).casefold())
    return decomposed.translate(_drop_combining())


@lru_cache(maxsize=4096)
def fold_char(char: str) -> str:
    """``fold`` of one character (the same result char by char: every step is per character)."""
    return fold(char)


def tokens(text: str) -> list[str]:
    """The words of ``text`` after folding, in order, each at most ``MAX_TOKEN`` characters."""
    return [w[:MAX_TOKEN] for w in WORD.findall(fold(text))]


@dataclass(frozen=True)
class IndexedText:
    """What one field value contributes to the index: its distinct words (space-separated),
    and a length norm so a match in a short value (a title) weighs more than in a long one."""

    body: str
    norm: float


def index_text(value: str) -> IndexedText | None:
    """The index entry of a field value, or ``None`` when it holds no word."""
    words = tokens(value[:MAX_INDEXED_CHARS])
    if not words:
        return None
    # Distinct words only: queries AND single words (no phrases), so positions are not needed.
    body = " ".join(dict.fromkeys(words))
    return IndexedText(body, round(1.0 / (1.0 + math.log(1 + len(words))), 6))


@dataclass(frozen=True)
class Term:
    """One query word; ``prefix`` for the last word typed (``pho`` finds ``phở`` and ``phong``)."""

    word: str
    prefix: bool = False

    def matches(self, token: str) -> bool:
        return token.startswith(self.word) if self.prefix else token == self.word


def query_terms(q: str) -> list[Term]:
    """The words of a query, distinct, at most ``MAX_TERMS``; the last typed word is a prefix.

    Only letters and digits survive, so nothing of the query's syntax (quotes, ``*``, ``:``,
    parentheses, ``NEAR``/``AND`` as operators) can reach FTS5 or tsquery: an operator name is
    just a word like any other.
    """
    words = tokens(q)
    if not words:
        return []
    last = words[-1]
    distinct = list(dict.fromkeys(words))[:MAX_TERMS]
    return [Term(w, prefix=(w == last)) for w in distinct]


def _folded_with_offsets(text: str) -> tuple[str, Sequence[int]]:
    """The folded text and, for each original character, where its folding starts in it."""
    if text.isascii():
        return text.lower(), range(len(text))
    # One translate table for the distinct characters: C speed instead of a loop per character.
    table = {ord(c): fold_char(c) for c in set(text)}
    folded = text.translate(table)
    if all(len(v) == 1 for v in table.values()):  # the usual case: offsets do not move
        return folded, range(len(text))
    return folded, list(accumulate((len(table[ord(c)]) for c in text), initial=0))[:-1]


def highlight(value: str, terms: list[Term]) -> str | None:
    """A short excerpt of ``value`` around its first match, HTML-escaped, each matching word
    wrapped in ``<mark>``; ``None`` when no word of the scanned part matches."""
    text = value[:HIGHLIGHT_SCAN]
    folded, starts = _folded_with_offsets(text)
    spans: list[tuple[int, int]] = []
    end = 0
    for m in WORD.finditer(folded):
        if not any(t.matches(m.group()[:MAX_TOKEN]) for t in terms):
            continue
        # Map folded offsets back to the original characters that produced them.
        start, stop = bisect_right(starts, m.start()) - 1, bisect_right(starts, m.end() - 1)
        while stop < len(text) and not fold_char(text[stop]):  # keep trailing combining marks
            stop += 1
        if not spans:
            begin = max(0, start - SNIPPET_LEAD)
            end = min(len(value), begin + SNIPPET_CHARS)
        if stop > end:
            break  # past the excerpt: nothing further can be shown
        if spans and start < spans[-1][1]:
            continue  # one character folding to several words (``¼`` -> ``1⁄4``) is marked once
        spans.append((start, stop))
    if not spans:
        return None
    out, at = [], begin
    for start, stop in spans:
        out.append(html.escape(value[at:start]))
        out.append(f"<mark>{html.escape(value[start:stop])}</mark>")
        at = stop
    out.append(html.escape(value[at:end]))
    return ("…" if begin > 0 else "") + "".join(out) + ("…" if end < len(value) else "")
