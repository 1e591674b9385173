"""svc's pytest plugin itself: it loads without pytest-asyncio, and --svc-services-only keeps the
tests that touch a service. Each runs pytest in a child process on a small project of its own: a
fork of one process that imported pytest and its plugins once (``kernel.testing.commands``), but
for the run without pytest-asyncio, whose import path is the point, which starts cold."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernel import testing
from kernel.testing.commands import ForkedMain


@pytest.fixture(scope="module")
def forked_pytest():
    from importlib.metadata import entry_points

    plugins = sorted({ep.value.split(":")[0] for ep in entry_points(group="pytest11")})
    with ForkedMain("pytest", plugins, env=_env()) as forked:  # the runs' environment: no CI
        yield forked


def _project(tmp_path: Path, tests: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    (tmp_path / "test_outside.py").write_text(tests)
    return tmp_path


def _env(extra_env: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SVC_", "PYTEST_XDIST", "CI"))}
    return {**env, **(extra_env or {})}


def test_an_unrelated_project_runs_without_pytest_asyncio(tmp_path):
    # svc-cms installed without its test extra: pytest-asyncio's plugin is not there (-p no:asyncio)
    # and importing its module fails (a package ahead on the path that raises ImportError).
    shadow = tmp_path / "shadow" / "pytest_asyncio"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('pytest-asyncio is not installed')\n")
    project = _project(tmp_path / "project", "def test_plain():\n    assert 1 + 1 == 2\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:asyncio", "-p", "no:xdist"], cwd=project,
                         env=_env({"PYTHONPATH": str(shadow.parent)}), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed" in out.stdout


def test_services_only_keeps_marked_tests_and_those_using_service_fixtures(tmp_path, forked_pytest):
    project = _project(tmp_path, (
        "import pytest\n\n"
        "def test_pure():\n    assert True\n\n"
        "@pytest.mark.svc_services\n"
        "def test_marked():\n    assert True\n\n"
        "@pytest.mark.svc_services\n"
        "@pytest.mark.svc_first_pass_only('nothing here depends on the database')\n"
        "def test_first_pass_only():\n    assert True\n"
    ))
    both = forked_pytest.run("-q", "-p", "no:xdist", cwd=project, env=_env(), timeout=120)
    assert both.returncode == 0 and "3 passed" in both.stdout, both.stdout + both.stderr
    only = forked_pytest.run("-q", "-p", "no:xdist", "--svc-services-only", "-rA", cwd=project, env=_env(),
                             timeout=120)
    assert only.returncode == 0, only.stdout + only.stderr
    assert "1 passed, 2 deselected" in only.stdout and "PASSED test_outside.py::test_marked" in only.stdout
    assert "test_first_pass_only" not in only.stdout


def test_the_service_fixtures_are_the_ones_an_app_or_redis_needs():
    assert testing.SERVICE_FIXTURES == {"svc_template_db", "redis_url"}


def test_skip_or_fail_fails_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        testing.skip_or_fail("Redis does not answer")
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception):
        testing.skip_or_fail("Redis does not answer")


def test_examples_follow_the_profile(monkeypatch):
    monkeypatch.delenv("SVC_HYPOTHESIS_PROFILE", raising=False)
    assert testing.examples(300) == 300
    monkeypatch.setenv("SVC_HYPOTHESIS_PROFILE", "ci")
    assert (testing.examples(300), testing.examples(20)) == (75, 10)
    monkeypatch.setenv("SVC_HYPOTHESIS_PROFILE", "thorough")
    assert testing.examples(300) == 1200


def test_the_ci_profile_draws_what_the_seed_says(tmp_path, forked_pytest):
    # scripts/test passes a fresh --hypothesis-seed each run and prints it: another seed draws
    # other inputs, the same seed (SVC_HYPOTHESIS_SEED=N) draws the same ones again.
    project = _project(tmp_path, (
        "import os\n"
        "from hypothesis import given, settings, strategies as st\n\n"
        "@settings(max_examples=20)\n"
        "@given(st.integers())\n"
        "def test_draws(n):\n"
        "    assert settings.default.database is None and not settings.default.derandomize  # ci\n"
        "    with open(os.environ['DRAWN'], 'a') as out:\n"
        "        out.write(f'{n}\\n')\n"
    ))

    def drawn(seed: str, name: str) -> list[str]:
        path = tmp_path / name
        out = forked_pytest.run("-p", "no:xdist", f"--hypothesis-seed={seed}", cwd=project, timeout=120,
                                env=_env({"SVC_HYPOTHESIS_PROFILE": "ci", "DRAWN": str(path)}))
        assert out.returncode == 0, out.stdout + out.stderr
        return path.read_text().split()

    first = drawn("1", "first")
    assert drawn("1", "again") == first and drawn("2", "other") != first


def test_http_receiver_serves_and_keeps_requests(http_receiver):
    import httpx

    url = http_receiver.serve("/doc", {"a": 1})
    assert httpx.get(url).json() == {"a": 1}
    assert httpx.post(http_receiver.url("/hook"), json={"event": "x"}).status_code == 404
    assert http_receiver.hits == {"/doc": 1, "/hook": 1}
    assert http_receiver.received("/hook")[0].method == "POST"
    assert http_receiver.received("/hook")[0].json() == {"event": "x"}


def test_a_responder_that_raises_fails_the_test_naming_the_request():
    import httpx

    def only_json(request):
        assert request.headers.get("Content-Type") == "application/json", "the hook sends JSON"
        return 204, b"", {}

    receiver = testing.HttpReceiver()
    try:
        url = receiver.respond("/hook", only_json)
        assert httpx.post(url, json={"ok": 1}).status_code == 204
        refused = httpx.post(url, content=b"plain", headers={"Content-Type": "text/plain"})
    finally:
        receiver.stop()
    # The app sees an answer (not a dropped connection), and the test fails in its own thread.
    assert refused.status_code == 500
    assert refused.json()["detail"].startswith("POST /hook: AssertionError: the hook sends JSON")
    with pytest.raises(pytest.fail.Exception, match=r"(?s)broke its contract:\nPOST /hook: AssertionError.*b'plain'"):
        receiver.check()
