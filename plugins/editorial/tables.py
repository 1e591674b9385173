"""The editorial plugin's tables: each item's workflow state, and the review requests.

Items are named by collection name and item id (as the item events name them). An item with
no state row is in ``draft``.
"""

from sqlalchemy import Column, DateTime, Index, String, Table, Text

from kernel.db.meta import id_column, metadata, site_column, timestamp_column

states = Table(
    "svc_editorial_states",
    metadata,
    site_column(primary_key=True),
    Column("collection", String(64), primary_key=True),
    Column("item_id", String(64), primary_key=True),
    Column("state", String(20), nullable=False),
    Column("review_id", String(36), nullable=True),  # the latest review request
    timestamp_column("updated_at"),
)

reviews = Table(
    "svc_editorial_reviews",
    metadata,
    id_column(),
    site_column(),
    Column("collection", String(64), nullable=False),
    Column("item_id", String(64), nullable=False),
    Column("state", String(20), nullable=False),  # in_review | approved | rejected | superseded
    Column("reviewer_id", String(36), nullable=False),
    Column("submitted_by", String(36), nullable=True),
    Column("author_id", String(36), nullable=True),  # the item's userCreated at submission
    Column("reason", Text, nullable=True),
    timestamp_column("created_at"),
    Column("decided_at", DateTime(timezone=True), nullable=True),
    Column("decided_by", String(36), nullable=True),
    Index("ix_svc_editorial_reviews_site", "site_id", "state", "created_at"),
    Index("ix_svc_editorial_reviews_item", "site_id", "collection", "item_id"),
)
