"""Identity tables. Users are global identities (email unique, case-insensitive); their
membership of sites, with a role in each, belongs to the access layer."""

from sqlalchemy import Boolean, Column, DateTime, ForeignKey, Index, Integer, String, Table, UniqueConstraint

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamp_column, timestamps

users = Table(
    "svc_users",
    metadata,
    id_column(),
    Column("email", String(320), nullable=False, unique=True),
    Column("password_hash", String(255), nullable=True),
    Column("first_name", String(200), nullable=True),
    Column("last_name", String(200), nullable=True),
    Column("avatar", String(500), nullable=True),
    Column("status", String(20), nullable=False, default="active"),
    Column("is_instance_admin", Boolean, nullable=False, default=False),
    Column("token_version", Integer, nullable=False, default=1),
    *timestamps(),
)

# One row per refresh token; a login starts a family, each refresh rotates within it.
# Only a SHA-256 of the token is stored. Reuse of a rotated token revokes the whole family.
refresh_tokens = Table(
    "svc_refresh_tokens",
    metadata,
    id_column(),
    site_column(nullable=True, foreign_key=False),  # None: an instance-wide (instance admin) session
    Column("user_id", String(36), ForeignKey("svc_users.id", ondelete="CASCADE"), nullable=False),
    Column("family_id", String(36), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    timestamp_column("created_at"),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("last_used_at", DateTime(timezone=True), nullable=True),
    Column("rotated_at", DateTime(timezone=True), nullable=True),
    Column("revoked_at", DateTime(timezone=True), nullable=True),
    Column("user_agent", String(300), nullable=True),
    Column("ip", String(64), nullable=True),
    Column("impersonator_id", String(36), nullable=True),
    Index("ix_svc_refresh_tokens_user", "user_id"),
    Index("ix_svc_refresh_tokens_family", "family_id"),
)

# Single-use, expiring tokens mailed to people: verify_email, reset_password, invite.
one_time_tokens = Table(
    "svc_one_time_tokens",
    metadata,
    id_column(),
    site_column(nullable=True, foreign_key=False),
    Column("user_id", String(36), ForeignKey("svc_users.id", ondelete="CASCADE"), nullable=False),
    Column("purpose", String(30), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    timestamp_column("created_at"),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("used_at", DateTime(timezone=True), nullable=True),
)

api_keys = Table(
    "svc_api_keys",
    metadata,
    id_column(),
    site_column(),
    Column("name", String(200), nullable=False),
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("key_prefix", String(16), nullable=False),
    Column("role_id", String(36), nullable=True),
    Column("created_by", String(36), nullable=True),
    timestamp_column("created_at"),
    Column("expires_at", DateTime(timezone=True), nullable=True),
    Column("last_used_at", DateTime(timezone=True), nullable=True),
    # A personal key's owner (/me/api-keys); null for a site key made through /api-keys.
    Column("owner_id", String(36), ForeignKey("svc_users.id", ondelete="CASCADE"), nullable=True),
    Index("ix_svc_api_keys_owner", "owner_id"),
)

issuers = Table(
    "svc_issuers",
    metadata,
    id_column(),
    site_column(),
    Column("issuer", String(500), nullable=False),
    Column("config", json_type, nullable=False),
    Column("enabled", Boolean, nullable=False, default=True),
    *timestamps(),
    UniqueConstraint("site_id", "issuer", name="uq_svc_issuers_site_issuer"),
)

# Users provisioned from a trusted issuer: (issuer, subject) -> the local user.
external_identities = Table(
    "svc_external_identities",
    metadata,
    site_column(primary_key=True),
    Column("issuer_id", String(36), ForeignKey("svc_issuers.id", ondelete="CASCADE"), primary_key=True),
    Column("subject", String(300), primary_key=True),
    Column("user_id", String(36), ForeignKey("svc_users.id", ondelete="CASCADE"), nullable=False),
    timestamp_column("created_at"),
)

# OpenID Connect logins started at a trusted issuer (POST /auth/external/start), waiting for
# their code. Only the state's SHA-256 is kept; the PKCE verifier and nonce are derived from the
# state (oidc_login.py). ``used_at`` and ``code_hash`` are set when the state is redeemed.
external_logins = Table(
    "svc_external_logins",
    metadata,
    id_column(),
    site_column(),
    Column("issuer_id", String(36), ForeignKey("svc_issuers.id", ondelete="CASCADE"), nullable=False),
    Column("state_hash", String(64), nullable=False, unique=True),
    Column("redirect_uri", String(2000), nullable=False),
    timestamp_column("created_at"),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("used_at", DateTime(timezone=True), nullable=True),
    Column("code_hash", String(64), nullable=True),
    Index("ix_svc_external_logins_site_expires", "site_id", "expires_at"),
)
