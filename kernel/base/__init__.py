"""The base floor: what every other part of the kernel may use, importing nothing of the kernel above it.

``ids`` (UUIDv7), ``timestamps``, ``errors`` (``ApiError``, the code table, the envelope), ``jsoncodec``
(``dumps``/``loads``: bodies, database JSON, bus messages), ``settings`` (the settings reader),
``extras``, ``secrets`` (the keyring), ``backoff``, ``signing``, ``logconfig``, ``sandbox``, ``outbound``.
"""
