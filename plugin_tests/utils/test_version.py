"""GET /api/v1/utils/version."""

import platform

from kernel import __version__


async def test_version(client):
    resp = await client.get("/api/v1/utils/version")
    assert resp.status_code == 200
    assert resp.json() == {"data": {"name": "svc", "version": __version__, "apiVersion": "1",
                                    "python": platform.python_version()}}
