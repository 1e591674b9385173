"""Roles, policies and teams of a site, and attaching policies: the plain CRUD resources and their routes."""
