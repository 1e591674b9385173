"""Many runs of a Python command from one started process, each run still a process of its own
(tests): ``SvcCommands`` for ``svc``, ``ForkedMain`` for any ``main`` (pytest's, for one).

An ``svc`` process spends most of its CPU importing (Python, SQLAlchemy, Falcon, every plugin:
about 1.3 s on the 2-core CI machine) before the command does anything. ``ForkedMain`` starts one
Python process that imports what the command needs once, then runs each command in a fork of it:
the command gets a fresh copy of that process (its own environment, working directory, standard
input, output and error, exit code, nothing left behind by an earlier command) and calls the
same ``main`` that ``python -m`` runs, without paying the imports again (~0.2 s of CPU for
``svc sites list`` instead of ~1.4 s). What only a cold start shows (which modules a command
imports, what ``PYTHONPATH`` changes, ``svc serve`` and its signals) stays in a plain subprocess.

    with SvcCommands() as svc:
        done = svc.run("sites", "list", env=env)   # a subprocess.CompletedProcess
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

# The forking process: ``python -c _DRIVER MODULE PRELOAD...``. It imports each PRELOAD
# ("module", or "module:function" to call it too), then reads one JSON request a line ({"argv",
# "env", "input", "cwd", "timeout"}), forks, and answers one JSON line ({"returncode", "stdout",
# "stderr", "cpu"}). The child swaps in the request's environment, directory and files before
# MODULE's ``main`` reads any of them, and leaves with os._exit after the interpreter's exit
# functions, as a process leaving ``sys.exit`` would.
_DRIVER = r"""
import atexit, importlib, json, os, signal, sys, tempfile, traceback
target = importlib.import_module(sys.argv[1])
for name in sys.argv[2:]:
    module, _, function = name.partition(":")
    loaded = importlib.import_module(module)
    if function:
        getattr(loaded, function)()

requests, answers = sys.stdin.buffer, os.fdopen(os.dup(1), "w")
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # nothing of the server's own on the answer pipe
for line in requests:
    request = json.loads(line)
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        stdin.write(request["input"].encode()); stdin.flush(); stdin.seek(0)
        answers.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            signal.alarm(request["timeout"])  # a run that hangs ends as a killed process would
            try:
                for fd, target_file in ((0, stdin), (1, out), (2, err)):
                    os.dup2(target_file.fileno(), fd)
                sys.stdin = open(0, closefd=False)
                sys.stdout = open(1, "w", closefd=False)
                sys.stderr = open(2, "w", closefd=False)
                os.environ.clear()
                os.environ.update(request["env"])
                os.chdir(request["cwd"])
                sys.argv = [target.__file__, *request["argv"]]
                try:
                    code = target.main(request["argv"])
                except SystemExit as exc:
                    if exc.code is None or isinstance(exc.code, int):
                        code = exc.code or 0
                    else:
                        print(exc.code, file=sys.stderr)
                except BaseException:
                    traceback.print_exc()
                atexit._run_exitfuncs()
            finally:
                for stream in (sys.stdout, sys.stderr):
                    try:
                        stream.flush()
                    except Exception:
                        pass
                os._exit(int(code) if isinstance(code, int) else 1)
        _, status, usage = os.wait4(pid, 0)
        out.seek(0); err.seek(0)
        answers.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status),
                                  "stdout": out.read().decode(errors="replace"),
                                  "stderr": err.read().decode(errors="replace"),
                                  "cpu": usage.ru_utime + usage.ru_stime}) + "\n")
        answers.flush()
"""


class ForkedMain:
    """One forking process (above) for ``python -m MODULE``; ``run`` is ``subprocess.run`` of it with
    ``capture_output=True, text=True``. Close it (or use ``with``): its CPU, and its forks', is
    counted when it is waited for. ``env`` is the forking process's own environment, which its
    imports see (hypothesis, imported by a pytest plugin, picks its default profile from ``CI``
    then): give it what the runs' environments have in common; by default this process's without
    its ``SVC_`` settings."""

    def __init__(self, module: str, preload: Iterable[str] = (), cwd: Path = ROOT,
                 env: dict[str, str] | None = None) -> None:
        self.module, self.cwd = module, cwd
        self.cpu: list[tuple[tuple[str, ...], float]] = []  # each run's CPU seconds (its fork's)
        if env is None:
            env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _DRIVER, module, *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=cwd,
            text=True,
        )

    def run(
        self, *args: str, env: dict[str, str], input: str = "", cwd: Path | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess:
        """``python -m MODULE ARGS`` with exactly ``env`` as its environment, ``input`` on its
        standard input, in ``cwd``; a run still going after ``timeout`` seconds is ended by SIGALRM
        (``TimeoutExpired``)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        command = [sys.executable, "-m", self.module, *args]
        request = {
            "argv": list(args),
            "env": env,
            "input": input,
            "cwd": str(cwd or self.cwd),
            "timeout": math.ceil(timeout),
        }
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(
                f"the forking process ended (exit {self.proc.wait(timeout)}) before running {args}"
            )
        answer = json.loads(line)
        if answer["returncode"] == -signal.SIGALRM:
            raise subprocess.TimeoutExpired(command, timeout, answer["stdout"], answer["stderr"])
        self.cpu.append((args, answer["cpu"]))
        return subprocess.CompletedProcess(command, answer["returncode"], answer["stdout"], answer["stderr"])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> ForkedMain:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class SvcCommands(ForkedMain):
    """``svc`` commands (``python -m kernel.cli``), forked after the app's modules and every
    plugin (through its entry point) are imported."""

    def __init__(self, cwd: Path = ROOT) -> None:
        super().__init__("kernel.cli", ("kernel.app", "kernel.hooks.plugins:make_plugin_manager"), cwd)
