"""The config manifest ``svc.config@v1``: export, import, its other sections' hook, its OpenAPI schemas
and routes."""
