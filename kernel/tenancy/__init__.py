"""Tenancy: the sites table, site resolution and the site-scoped query helper."""
