"""The checked filter tree as SQL: the compiler, typed operands, expressions per dialect, JSON paths,
SQLite's JSON."""
