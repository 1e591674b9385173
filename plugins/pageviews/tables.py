"""The pageview tables, all keyed by site.

``svc_pageview_daily``: views and uniques per (day, path); the path ``""`` holds the site's
totals (its uniques are visitors of the site that day, not a sum over paths).
``svc_pageview_visitors``: the salted visitor hashes seen per (day, path), so that uniques stay
exact across flushes and workers; rows older than yesterday are deleted at each flush.
``svc_pageview_salts``: the random salt of each (site, day) when the ``pageviews`` setting
names no ``hashSalt``; deleted with the visitors, so yesterday's hashes cannot be recomputed.
"""

from sqlalchemy import BigInteger, Column, PrimaryKeyConstraint, String, Table

from kernel.db.meta import metadata, site_column

daily = Table(
    "svc_pageview_daily",
    metadata,
    site_column(),
    Column("day", String(10), nullable=False),
    Column("path", String(512), nullable=False),
    Column("views", BigInteger, nullable=False),
    Column("uniques", BigInteger, nullable=False),
    PrimaryKeyConstraint("site_id", "day", "path", name="pk_svc_pageview_daily"),
)

visitors = Table(
    "svc_pageview_visitors",
    metadata,
    site_column(),
    Column("day", String(10), nullable=False),
    Column("path", String(512), nullable=False),
    Column("visitor", String(32), nullable=False),
    PrimaryKeyConstraint("site_id", "day", "path", "visitor", name="pk_svc_pageview_visitors"),
)

salts = Table(
    "svc_pageview_salts",
    metadata,
    site_column(),
    Column("day", String(10), nullable=False),
    Column("salt", String(64), nullable=False),
    PrimaryKeyConstraint("site_id", "day", name="pk_svc_pageview_salts"),
)
