"""Reading items: the plan of a read, running it, and shaping what comes back.

``readplan`` (a read's statements, cached per site), ``listing`` (running them: one page, its
total, aggregates), ``projection`` and ``nested`` (``fields``/``deep``: nested m2o/o2m reads),
``drafts``/``locale`` (the X-Svc-Draft and X-Svc-Locale read options), ``counts`` (cached totals),
``whitelist`` (the names of a query that do not exist or may not be read, answered alike).
The write path imports none of these (tests/test_layout.py).
"""
