"""Trusted external issuers: their configuration and keys, the external-JWT step, linked local users,
OIDC login."""
