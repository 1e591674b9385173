"""API keys of a site and their routes."""
