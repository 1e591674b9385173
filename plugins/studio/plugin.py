"""Hook implementations of the studio plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from kernel import Route, hookimpl
from plugins.studio import routes
from plugins.studio.assets import package_bundle

name = "studio"
requires: tuple[str, ...] = ()

HTML = {"200": {"description": "The studio's page", "content": {"text/html": {"schema": {"type": "string"}}}}}
ASSET = {"200": {"description": "A content-hashed asset of the studio (JavaScript or CSS)",
                 "content": {"text/javascript": {"schema": {"type": "string"}},
                             "text/css": {"schema": {"type": "string"}}}}}


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    bundle = package_bundle()
    public = {"site": "none", "auth": "public", "authenticate": False, "prefix": ""}
    return [
        # /studio and /studio/ are one path here (the router strips a trailing slash); the page
        # names its assets by absolute paths, so both work.
        Route("/studio", routes.PageResource(bundle), **public,
              openapi={"get": {"summary": "The studio's page (HTML; the app runs in the browser)",
                               "responses": HTML}}),
        Route("/studio/assets/{name}", routes.AssetResource(bundle), **public,
              openapi={"get": {"summary": "One of the studio's assets, by its content-hashed name",
                               "responses": ASSET}}),
    ]
