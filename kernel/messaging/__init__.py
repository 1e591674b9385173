"""messaging."""
