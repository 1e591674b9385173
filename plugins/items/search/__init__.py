"""Full-text search over items: the service behind ``GET /search`` and its index.

``service`` (one page of hits the caller may see), ``query`` (the dialect's query: ``pg``
tsvector, ``sqlite`` FTS5), ``text`` (the words of an item), ``index`` (``svc_search`` rows),
``events`` (bus filters keeping the index in sync in the write's transaction).
"""
