"""svc extensions SDK."""
