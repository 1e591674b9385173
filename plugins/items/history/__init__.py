"""Item history: revisions, versions (drafts), pins, and their events.

``revisions`` (every write's snapshot, revert), ``versions`` (named drafts of an item, promote),
``pins``, ``events`` (the bus handlers that record history; their tables are in ``tables.py``),
``target`` (the item a history route addresses, checked once).
"""
