"""PostgreSQL's half of search: one query word's hits, matched on the GIN-indexed ``tsv``.

``tsv`` is ``array_to_tsvector`` of the words ``search_text`` produced, and the query is a
``tsquery`` literal of one such word (``'pho'`` or ``'pho':*``), cast from a bound parameter:
no text-search parser or dictionary runs on either side, and the word holds only letters and
digits, so nothing in the user's input can become tsquery syntax.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import cast, literal, literal_column, select
from sqlalchemy.dialects.postgresql import TSQUERY

from plugins.items.search.index import search
from plugins.items.search.text import Term


def tsquery(term: Term) -> str:
    """The tsquery literal of one word (quoted; ``:*`` for a prefix)."""
    word = term.word.replace("\\", "\\\\").replace("'", "''")
    return f"'{word}'" + (":*" if term.prefix else "")


def term_hits(index: int, term: Term, scopes: list[Any], site_id: str) -> Any:
    """``(collection_id, item_id, field, norm, term)`` of the index rows holding ``term``.

    The caller adds the (collection, readable fields) condition shared with SQLite.
    """
    return (
        select(search.c.collection_id, search.c.item_id, search.c.field, search.c.norm,
               literal_column(str(int(index))).label("term"))
        .where(search.c.site_id == site_id,
               literal_column("svc_search.tsv").op("@@")(cast(literal(tsquery(term)), TSQUERY)))
    )
