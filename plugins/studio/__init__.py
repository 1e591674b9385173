"""The studio: the editors' app in the browser, served at ``/studio/`` (docs/studio.md).

Owns no table and no API of its own: the app is a client of the public REST API, like any other.
This plugin only serves its files: ``index.html`` (no-cache, a strict Content-Security-Policy,
no inline script) and the ES modules and style sheet under ``/studio/assets/`` with
content-hashed names (cached for a year, immutable). The files live in ``app/``; they are plain
ES modules with no build step (docs/decisions/studio-build.md).

Hooks: ``register_routes``. Modules: ``plugin``, ``routes``, ``assets``.
"""
