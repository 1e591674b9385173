"""Writing items: the write path, rows and events, relations held in JSON.

``path`` (create, update, upsert, delete: what the façade and history's revert and promote call),
``writes`` (rows + bus and durable events, through ``events``), ``ondelete``/``refs`` (relations
held in JSON), ``dependents`` (an item's dependents, and resolving them). Reads nothing of
``read/`` (tests/test_layout.py).
"""
