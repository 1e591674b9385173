"""Under ``CI=true`` a skipped test fails the run, unless ``tests/allowed_skips.txt`` lists it.

A skip on a laptop says "this machine lacks something"; in CI the same skip would let the run go
green without proving what the test claims. So every skip CI may see is written down once, with
its reason, in the allowlist (``tests/test_skip_policy.py`` keeps that list short and true).
Skip reasons always print (``-rs`` in pyproject's addopts).

The policy runs in pytest's controlling process: with pytest-xdist, the workers' reports reach it
through ``pytest_runtest_logreport`` like its own.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import pytest

from kernel.testing import in_ci

ALLOWED_SKIPS = Path(__file__).with_name("allowed_skips.txt")
SEPARATOR = " -- "


def load_allowed(path: Path) -> list[tuple[str, str]]:
    """The allowlist's ``(pattern, reason)`` pairs. A pattern is an fnmatch pattern over the test's
    node id without its parameters; ``#`` starts a comment line. A line without a reason is an error."""
    entries = []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pattern, sep, reason = line.partition(SEPARATOR)
        if not sep or not pattern.strip() or not reason.strip():
            raise ValueError(f"{path}:{number}: write 'pattern{SEPARATOR}reason'")
        entries.append((pattern.strip(), reason.strip()))
    return entries


def base_nodeid(nodeid: str) -> str:
    """The node id without its parametrization: ``a.py::test_x[1-2]`` -> ``a.py::test_x``."""
    return nodeid.split("[", 1)[0]


def unlisted(skipped: list[tuple[str, str]], allowed: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The ``(nodeid, reason)`` skips no allowlist pattern covers."""
    return [(nodeid, reason) for nodeid, reason in skipped
            if not any(fnmatch.fnmatchcase(base_nodeid(nodeid), pattern) for pattern, _ in allowed)]


class SkipPolicy:
    def __init__(self, allowed_path: Path) -> None:
        self.allowed_path = allowed_path
        self.skipped: list[tuple[str, str]] = []
        self.refused: list[tuple[str, str]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
            self.skipped.append((report.nodeid, reason))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.refused = unlisted(self.skipped, load_allowed(self.allowed_path))
        if self.refused and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.refused:
            return
        terminalreporter.section("skips CI does not allow", sep="=", red=True, bold=True)
        terminalreporter.line(f"CI=true: these tests skipped, and {self.allowed_path} does not list them:")
        for nodeid, reason in self.refused:
            terminalreporter.line(f"  {nodeid}: {reason}", red=True)


def pytest_configure(config: pytest.Config) -> None:
    if in_ci() and not hasattr(config, "workerinput"):  # xdist workers report to the controller
        path = Path(os.environ.get("SVC_ALLOWED_SKIPS") or ALLOWED_SKIPS)
        config.pluginmanager.register(SkipPolicy(path), "svc-skip-policy")
