"""The kernel's job tables: the queue itself and the periodic ticks already claimed."""

from sqlalchemy import BigInteger, Column, DateTime, Index, Integer, String, Table, Text, text

from kernel.db.meta import json_type, metadata, site_column, timestamps

# One row per queued run. A row is written in the caller's transaction (so a rolled-back write
# enqueues nothing), claimed by one worker under a lease, deleted when the run succeeds, put
# back as ``pending`` with a later ``due_at`` when it fails and has retries left, and kept as
# ``failed`` (for the operator) when it has none. ``site_id`` is NULL for instance-wide jobs.
jobs = Table(
    "svc_jobs",
    metadata,
    Column("id", String(32), primary_key=True),
    site_column(nullable=True),
    Column("name", String(200), nullable=False),
    Column("args", json_type, nullable=False),
    # "<site or ->/<name>/<key>": one column, so instance-wide jobs (site NULL) dedupe too.
    Column("dedupe", String(600), nullable=True),
    Column("status", String(16), nullable=False),  # pending | running | failed
    Column("due_at", DateTime(timezone=True), nullable=False),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("claimed_by", String(100), nullable=True),
    Column("lease_until", DateTime(timezone=True), nullable=True),
    Column("last_error", Text, nullable=True),
    *timestamps(),
    Index("ix_svc_jobs_status_due", "status", "due_at"),
    Index("ix_svc_jobs_site", "site_id"),
    # The dedupe window: a key is taken while its job waits (pending), and free again once a
    # worker claims it, so a change made while the job runs gets a run of its own.
    Index("uq_svc_jobs_pending_dedupe", "dedupe", unique=True,
          postgresql_where=text("status = 'pending'"), sqlite_where=text("status = 'pending'")),
)

# Periodic ticks: the last slot each periodic job was enqueued for. Instance-level (a tick is
# not a site's), so ``site_id`` stays NULL; kept for the house rule that every table has one.
job_ticks = Table(
    "svc_job_ticks",
    metadata,
    Column("name", String(200), primary_key=True),
    site_column(nullable=True, foreign_key=False),
    Column("slot", BigInteger, nullable=False),
)
