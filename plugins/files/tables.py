"""The files plugin's tables, every one with ``site_id``.

- ``svc_files``: one row per stored file; ``key`` is its file name, unique in the site (the
  ``/media/{key}`` name); ``storage_key`` is where the bytes are, chosen by the server
  (``<site>/files/<id>/<random>``), never shown to clients; ``focal_x``/``focal_y`` the point a
  cover crop keeps (``focalPoint``).
- ``svc_file_tags``: a file's tags, one row each, for ``filter[tags][_eq]``.
- ``svc_file_folders``: folders (``name``, ``parent_id``), nested; a file is in one through
  ``svc_files.folder_id`` (``folderId``).
- ``svc_file_uploads``: presigned uploads waiting for ``POST /files``.
- ``svc_transform_presets``: saved transforms (``key``, ``name``, ``dsl``).

A site's upload policy is the setting ``upload_policy`` (the settings plugin's table).
"""

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamp_column, timestamps

files = Table(
    "svc_files",
    metadata,
    id_column(),
    site_column(),
    Column("key", String(255), nullable=False),
    Column("storage_key", String(1024), nullable=False),
    Column("title", String(255), nullable=True),
    Column("description", Text, nullable=True),  # free text (files_0004)
    Column("type", String(127), nullable=False),
    Column("filesize", BigInteger, nullable=False),
    Column("width", Integer, nullable=True),
    Column("height", Integer, nullable=True),
    Column("checksum", String(64), nullable=False),
    Column("folder", String(255), nullable=True),
    Column("tags", json_type, nullable=False),
    Column("focal_x", Integer, nullable=True),  # the focal point, pixels of the original (files_0002)
    Column("focal_y", Integer, nullable=True),
    Column("folder_id", String(36), nullable=True),  # a folder of svc_file_folders (files_0003)
    Column("uploaded_by", String(64), nullable=True),
    *timestamps(),
    UniqueConstraint("site_id", "key", name="uq_svc_files_site_key"),
    Index("ix_svc_files_site_created", "site_id", "created_at"),
    Index("ix_svc_files_site_folder", "site_id", "folder_id"),
)

folders = Table(
    "svc_file_folders",
    metadata,
    id_column(),
    site_column(),
    Column("name", String(255), nullable=False),
    Column("parent_id", String(36), ForeignKey("svc_file_folders.id"), nullable=True),
    *timestamps(),
    Index("ix_svc_file_folders_site_parent", "site_id", "parent_id"),
)

file_tags = Table(
    "svc_file_tags",
    metadata,
    site_column(),
    Column("file_id", String(36), ForeignKey("svc_files.id", ondelete="CASCADE"), nullable=False),
    Column("tag", String(100), nullable=False),
    UniqueConstraint("file_id", "tag", name="uq_svc_file_tags_file_tag"),
    Index("ix_svc_file_tags_site_tag", "site_id", "tag"),
)

uploads = Table(
    "svc_file_uploads",
    metadata,
    id_column(),
    site_column(),
    Column("filename", String(255), nullable=False),
    Column("type", String(127), nullable=False),
    Column("storage_key", String(1024), nullable=False),
    Column("created_by", String(64), nullable=True),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    timestamp_column("created_at"),
)

presets = Table(
    "svc_transform_presets",
    metadata,
    id_column(),
    site_column(),
    Column("key", String(64), nullable=False),
    Column("name", String(255), nullable=False),
    Column("dsl", String(1000), nullable=False),
    *timestamps(),
    UniqueConstraint("site_id", "key", name="uq_svc_transform_presets_site_key"),
)
