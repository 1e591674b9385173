"""Serving files: assets and media, image transforms, range requests, transform presets (with folders'
routes)."""
