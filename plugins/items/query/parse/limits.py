"""Bounds of the query language: every hostile input is refused with a 400 before it costs much.

The numbers are documented in ``docs/decisions/items-query-semantics.md``; the path depth of 8
is the API's own bound, shared with permission conditions.
"""

from __future__ import annotations

import re

# The grammar's own bounds (kernel.policy.filtergrammar, shared with permission conditions): depth 10
# (each filter object and each field's operator object is a level), lists of 1,000, dotted paths
# of 8 segments, integers within 64 bits.
from kernel.policy.filtergrammar import MAX_DEPTH as MAX_FILTER_DEPTH
from kernel.policy.filtergrammar import MAX_INT as MAX_INT
from kernel.policy.filtergrammar import MAX_LIST as MAX_LIST
from kernel.policy.filtergrammar import MAX_PATH_SEGMENTS as MAX_PATH_SEGMENTS

MAX_FILTER_NODES = 500  # keys, operators and list elements, counted over the whole tree
MAX_STRING = 10_000  # characters of any string in a filter
MAX_RELATION_HOPS = 3  # relations a single filter key may traverse
# Relations a read nests (``fields=a.b.c.title``: 3): REST's bound, and every caller's unless it
# asks for more (``ListQuery.nesting``). A caller that bounds the depth of what it asks itself
# may ask up to ``MAX_NESTING_CEILING``: GraphQL, whose depth guard of 12 leaves the root field,
# 10 relations and a leaf. Every level costs one statement per relation, whatever the rows.
MAX_NESTING = 3
MAX_NESTING_CEILING = 10
MAX_JSON_CHARS = 100_000  # raw text of a JSON-form parameter (filter, deep, aggregate)
# Read conditions of permissions are trusted (checked when written: 1,000 nodes, depth 10) and
# several rules are ORed together by kernel.access, one level deeper.
ROW_FILTER_NODES = 20_000
ROW_FILTER_DEPTH = MAX_FILTER_DEPTH + 1
MAX_KEY_SEGMENTS = 32  # bracket segments of one query-string key
MAX_NAMES = 200  # entries of fields, sort, groupBy, aggregate
MAX_DEEP_DEPTH = 4  # nesting of deep[a][b][c]... (a read nesting deeper allows as deep)
MAX_OFFSET = 2**31 - 1

# A segment is letters, digits and underscore (docs/decisions/items-query-semantics.md, Names).
# ASCII only: a segment is spliced into SQL text (as a quoted literal) so the index expressions match.
SEGMENT = re.compile(r"[A-Za-z0-9_]{1,64}")
