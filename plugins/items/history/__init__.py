"""Item history: revisions, versions (drafts), pins, their tables and events.

``revisions`` (every write's snapshot, revert), ``versions`` (named drafts of an item, promote),
``pins``, ``tables`` (``svc_item_revisions``, ``svc_item_versions``, pins), ``events`` (the
bus handlers that record history), ``target`` (the item a history route addresses, checked once).
"""
