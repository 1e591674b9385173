"""docs/quickstart.md runs as written: every ```sh block of the page, in order, in one bash
(``set -euo pipefail``, so the page's variables flow from block to block and any failing command
fails the test), against a fresh ``svc serve`` started as the page says (development, the base
domain ``localhost``, an encryption key) on a fresh data dir. The page checks its own results
(``test``, ``cmp``, ``grep``); the test also checks what the page prints at the end of each step."""

from __future__ import annotations

import base64
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from kernel.testing import ADMIN_PASSWORD, serve_process, skip_or_fail, stop_process

PAGE = Path(__file__).resolve().parents[1] / "docs" / "quickstart.md"
BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.S | re.M)


def page_script() -> str:
    """Every ```sh block of the page, in order."""
    return "\n".join(BLOCK.findall(PAGE.read_text(encoding="utf-8")))


def test_the_page_has_its_steps():
    script = page_script()
    assert len(BLOCK.findall(PAGE.read_text(encoding="utf-8"))) == 9  # steps 1 to 9
    for needed in ("/collections", "/relations", "_icontains", "sort=-views", "fields=", "/roles/public/permissions", "/api-keys",
                   "/auth/refresh", "/files/upload/", "<img src=", "/assets/blog/", "/cdc/subscriptions", "X-Svc-Signature",
                   "/graphql"):
        assert needed in script, needed


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    for tool in ("bash", "curl", "jq"):
        if shutil.which(tool) is None:
            skip_or_fail(f"docs/quickstart.md needs {tool}")
    key = base64.b64encode(os.urandom(32)).decode()
    proc, base = serve_process(tmp_path_factory.mktemp("quickstart") / "data", env={
        "SVC_ENV": "development", "SVC_ENCRYPTION_KEY": key})
    try:
        yield base
    finally:
        assert stop_process(proc, signal.SIGINT) == 0


def test_every_command_of_the_page_runs(server, tmp_path):
    proc = subprocess.Popen(["bash", "-euo", "pipefail", "-c", page_script()], cwd=tmp_path,
                            env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "B": server,
                                 "PASSWORD": ADMIN_PASSWORD},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, f"the page failed (exit {proc.returncode}); its output:\n{out}"
    lines = out.splitlines()
    assert '"PERMISSION_DENIED"' in lines  # anonymous before the public policy, the key's write
    assert lines.count("3") == 2  # posts read anonymously, then with the API key
    assert "admin@example.com" in lines  # after the refresh
    assert "the image is served" in lines
    assert any(re.fullmatch(r"verified items\.create posts [0-9a-f-]{36}", line) for line in lines), out
    assert ('{"posts":[{"title":"Hello again","views":250,"author":{"name":"Ada"}},'
            '{"title":"Hello world","views":10,"author":{"name":"Ada"}}]}') in lines
