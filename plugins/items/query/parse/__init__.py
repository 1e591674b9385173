"""The query string parsed: list parameters, bracket keys, ``deep``, name lists and the language's bounds."""
