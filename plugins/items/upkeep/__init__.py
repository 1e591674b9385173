"""Upkeep around item writes and schema changes: indexes, statistics, background jobs.

``indexes`` (expression indexes of ``indexed``/``unique`` fields), ``schema_hooks`` (what a field
change does to stored items), ``planner_stats`` and ``pg_statistics`` (planner statistics),
``search_backfill`` (indexing items the search index misses), ``small_indexes`` (``svc items
drop-small-indexes``: the field indexes of small collections).
"""
