"""The CI skip policy (tests/skip_policy.py) and its allowlist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.skip_policy import ALLOWED_SKIPS, load_allowed, unlisted

ROOT = Path(__file__).resolve().parents[1]
MOST_ALLOWED = 12


def test_the_allowlist_is_short_and_names_real_tests():
    entries = load_allowed(ALLOWED_SKIPS)
    assert len(entries) <= MOST_ALLOWED, "each allowed skip is a claim CI does not check: keep the list short"
    for pattern, reason in entries:
        path, sep, name = pattern.partition("::")
        assert sep and (ROOT / path).is_file(), f"{pattern}: name a test file and a test"
        defined = re.findall(r"^(?:async )?def (test_\w+)", (ROOT / path).read_text(), re.MULTILINE)
        assert any(re.fullmatch(re.escape(name).replace(r"\*", ".*"), test) for test in defined), \
            f"{pattern}: no such test in {path}"
        assert len(reason) >= 20, f"{pattern}: say why CI may skip it"


def test_a_line_without_a_reason_is_refused(tmp_path):
    path = tmp_path / "allowed.txt"
    path.write_text("# comment\n\ntests/a.py::test_x\n")
    with pytest.raises(ValueError, match="allowed.txt:3"):
        load_allowed(path)


def test_unlisted_ignores_parameters_and_matches_patterns():
    skipped = [("tests/a.py::test_x[sqlite-1]", "r"), ("tests/a.py::test_y", "r"), ("tests/b.py::test_z", "r")]
    assert unlisted(skipped, [("tests/a.py::test_x", "why"), ("tests/b.py::*", "why")]) == [("tests/a.py::test_y", "r")]


SUITE = """
import pytest

def test_runs():
    assert True

def test_skips():
    pytest.skip("a tool is missing")
"""


@pytest.mark.parametrize(("ci", "allowed", "status"), [
    ("true", "", pytest.ExitCode.TESTS_FAILED),                                  # CI: an unlisted skip fails
    ("true", "test_suite.py::test_skips -- the tool is optional here", pytest.ExitCode.OK),
    ("", "", pytest.ExitCode.OK),                                                # a laptop: it skips
])
def test_ci_fails_a_run_with_an_unlisted_skip(pytester, monkeypatch, ci, allowed, status):
    monkeypatch.setenv("CI", ci)
    allowlist = pytester.path / "allowed.txt"
    allowlist.write_text(allowed + "\n")
    monkeypatch.setenv("SVC_ALLOWED_SKIPS", str(allowlist))
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_inprocess("-p", "tests.skip_policy", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    assert result.ret == status
    refused = "skips CI does not allow" in result.stdout.str()
    assert refused == (status == pytest.ExitCode.TESTS_FAILED)
