"""Bounds of the query language: every hostile input is refused with a 400 before it costs much.

The numbers are documented in ``docs/decisions/items-query-semantics.md``; the path depth of 8
is api-spec.md's ("Filter dotted path depth").
"""

from __future__ import annotations

import re

MAX_FILTER_DEPTH = 10  # each filter object and each field's operator object is a level
MAX_FILTER_NODES = 500  # keys, operators and list elements, counted over the whole tree
MAX_LIST = 1000  # elements of an _in/_nin/_has_*_keys list, and of an _and/_or list
MAX_STRING = 10_000  # characters of any string in a filter
MAX_PATH_SEGMENTS = 8  # api-spec.md: a dotted path has at most 8 segments
MAX_RELATION_HOPS = 3  # relations a single filter key or nesting may traverse
MAX_JSON_CHARS = 100_000  # raw text of a JSON-form parameter (filter, deep, aggregate)
# Read conditions of permissions are trusted (checked when written: 1,000 nodes, depth 10) and
# several rules are ORed together by kernel.access, one level deeper.
ROW_FILTER_NODES = 20_000
ROW_FILTER_DEPTH = MAX_FILTER_DEPTH + 1
MAX_KEY_SEGMENTS = 32  # bracket segments of one query-string key
MAX_INT = 2**63 - 1  # integers beyond 64 bits would fail in the database, not here
MAX_NAMES = 200  # entries of fields, sort, groupBy, aggregate
MAX_DEEP_DEPTH = 4  # nesting of deep[a][b][c]...
MAX_OFFSET = 2**31 - 1

# api-spec.md: "segments are limited to letters, digits and underscore". ASCII only: a segment
# is spliced into SQL text (as a quoted literal) so the index expressions match.
SEGMENT = re.compile(r"[A-Za-z0-9_]{1,64}")
