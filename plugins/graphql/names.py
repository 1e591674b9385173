"""GraphQL names for collections and fields: kept when safe, otherwise encoded, never merged.

The rule (docs/graphql.md, "Names"):

- A name is **kept as is** when it is a GraphQL name that cannot clash with anything the schema
  adds: it matches ``^_?[A-Za-z][A-Za-z0-9_]*$``, holds no ``__`` (double underscore), does not
  end in ``_`` or ``_by_id``, and (for collections) does not start with ``_`` (``_collections``)
  and is not one of the schema's own type names
  (``Query``, ``Mutation``, ``Subscription``, ``ItemEvent``, ``JSON``, ``DateTime`` and the
  built-in scalars).
- Any other name is **encoded**: ``x__`` followed by the lower-case hex of its UTF-8 bytes
  (``__secret`` becomes ``x__5f5f736563726574``).

Kept names never contain ``__`` and encoded ones always do, and hex is one-to-one, so two
different names can never map to one GraphQL name. ``X_by_id``, ``create_X``, ``update_X``,
``delete_X`` and ``X_events`` are built from the mapped ``X``, so they are one-to-one too.
"""

from __future__ import annotations

import re

PLAIN = re.compile(r"^_?[A-Za-z][A-Za-z0-9_]*$")
ENCODED_PREFIX = "x__"
OWN_TYPES = frozenset({"Query", "Mutation", "Subscription", "ItemEvent", "JSON", "DateTime",
                       "String", "Int", "Float", "Boolean", "ID"})


def _kept(name: str) -> bool:
    return bool(PLAIN.match(name)) and "__" not in name and not name.endswith(("_", "_by_id"))


def encode(name: str) -> str:
    """The encoded form of ``name`` (always contains ``__``)."""
    return ENCODED_PREFIX + name.encode("utf-8").hex()


def field_name(name: str) -> str:
    """The GraphQL field name of a content field or relation alias."""
    return name if _kept(name) else encode(name)


def collection_name(name: str) -> str:
    """The GraphQL name of a collection: its type and its list query field."""
    return name if _kept(name) and not name.startswith("_") and name not in OWN_TYPES else encode(name)


def decode(mapped: str) -> str:
    """The original name of a mapped one (tests, error messages)."""
    if mapped.startswith(ENCODED_PREFIX):
        return bytes.fromhex(mapped[len(ENCODED_PREFIX):]).decode("utf-8")
    return mapped
