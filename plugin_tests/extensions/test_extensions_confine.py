"""A runner started by a user other than root (issue 37): in a user namespace of its own, with
network and mount namespaces inside it, it has no network, cannot see the data directory (owned
by its own user, so only the confinement keeps it out) and holds no secret of the environment.
Also the runner started by root, and what the seccomp filter and Landlock domain let through.

The runner is started here as the server starts it (``python -I -m extensions_sdk.runner FD``,
the scrubbed environment, the same ``readable`` and ``hidden`` paths) and driven over the real
channel; the test plays the server's end. When the tests run as root, the unprivileged runner is
started as ``nobody`` (its interpreter under ``/root`` bound back in a mount namespace first, as
``confine`` does for its own runners)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from extension_bundles import ATTEMPT

from extensions_sdk import channel, confine
from kernel.base.errors import ApiError
from plugins.extensions.host import _readable, spawn

NOBODY = 65534
HOSTILE = (
    """
    import ctypes
    import os
    import socket
    import subprocess
    import threading

    from extensions_sdk import Route, hookimpl, read_json, send_data
"""
    + ATTEMPT
    + """

    def connect(port):
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True


    def unshare():
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(0x10000000 | 0x40000000) != 0:  # a user and a network namespace
            raise PermissionError(ctypes.get_errno(), "unshare")
        return True


    def thread():
        seen = []
        worker = threading.Thread(target=lambda: seen.append(1))
        worker.start()
        worker.join()
        return seen == [1]


    class Probe:
        async def on_post(self, req, resp):
            body = await read_json(req)
            data = body["data"]
            send_data(resp, {
                "env": sorted(os.environ),
                "uid": os.getuid(),
                "interfaces": attempt(lambda: sorted(name for _, name in socket.if_nameindex())),
                "postgres": attempt(lambda: connect(5432)),
                "redis": attempt(lambda: connect(6379)),
                "listen": attempt(lambda: socket.create_server(("127.0.0.1", 0)).getsockname()[1]),
                "data_list": attempt(lambda: os.listdir(data)),
                "data_stat": attempt(lambda: oct(os.stat(data).st_mode & 0o777)),
                "secret_stat": attempt(lambda: os.stat(os.path.join(data, "secret.txt")).st_size),
                "secret_read": attempt(lambda: open(os.path.join(data, "secret.txt")).read()),
                "write_outside": attempt(lambda: open(os.path.join(body["outside"], "planted"), "w").write("x")),
                "write_own": attempt(lambda: open("mine.txt", "w").write("fine")),
                "fork": attempt(lambda: os.fork() and 0),
                "spawn": attempt(lambda: subprocess.run(["/bin/true"]).returncode),
                "thread": attempt(thread),
                "unshare": attempt(unshare),
            })


    @hookimpl
    def register_routes(kernel):
        return [Route("/hostile/probe", Probe())]
"""
)


@pytest.fixture
def base():
    """A folder every user can reach (pytest's own lies under a folder of mode 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="svc-confine-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _bundle(root: Path) -> Path:
    bundle = root / "bundle"
    (bundle / "hostile").mkdir(parents=True)
    (bundle / "hostile" / "__init__.py").write_text(textwrap.dedent(HOSTILE))
    return bundle


def _userns_allowed() -> bool:
    switch = Path("/proc/sys/kernel/unprivileged_userns_clone")
    if switch.exists() and switch.read_text().strip() == "0":
        return False
    return Path("/proc/sys/user/max_user_namespaces").read_text().strip() != "0"


def _as_nobody(workdir: str) -> None:
    """In the child before ``exec`` (root only): bind the interpreter back over ``/root`` in a
    mount namespace of its own, as ``confine`` does, then become ``nobody`` for good."""
    needed = [sys.base_prefix, sys.prefix, *_readable()]
    refused = confine._mount_namespace() or confine._reveal([p for p in needed if os.path.exists(p)], workdir)
    if refused:
        raise OSError(refused)
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


async def _runner(
    root: Path, data: Path, *, unprivileged: bool, hidden: tuple[Path, ...] = ()
) -> tuple[Any, channel.Peer, dict[str, Any]]:
    bundle = _bundle(root)
    config = {
        "name": "hostile",
        "entry": "hostile",
        "workdir": str(bundle),
        "readable": _readable(),
        "hidden": [str(data), *map(str, hidden)],
        "limits": {"memory_bytes": 512 * 1024 * 1024, "cpu_seconds": 30, "open_files": 64, "processes": 64},
    }
    demote = None
    if os.geteuid() == 0:  # as the server does: the runner's folder is nobody's
        for path in [root, *root.rglob("*")]:
            os.chown(path, NOBODY, NOBODY)
    if unprivileged and os.geteuid() == 0:

        def demote() -> None:
            _as_nobody(str(bundle))

    proc, parent = await spawn(config, preexec_fn=demote)
    asked: list[dict[str, Any]] = []

    async def handle(message: dict[str, Any]) -> Any:
        asked.append(message)  # the probes ask the server nothing: any call is a failure below
        raise ApiError(403, "EXTENSION_REFUSED", "nothing is offered in this test")

    peer = await channel.open_peer(parent, handle)
    declared = await asyncio.wait_for(peer.call("load"), 60)
    declared["asked"] = asked
    return proc, peer, declared


async def _probe(peer: channel.Peer, data: Path, outside: Path) -> dict[str, Any]:
    answer = await asyncio.wait_for(
        peer.call(
            "route",
            call="c1",
            site="s1",
            handle=0,
            method="POST",
            path="/ext/hostile/probe",
            query="",
            headers={"content-type": "application/json"},
            params={},
            body=base64.b64encode(json.dumps({"data": str(data), "outside": str(outside)}).encode()).decode(),
        ),
        60,
    )
    assert answer["status"] == 200, answer
    return answer["media"]["data"]


async def _stop(proc: Any, peer: channel.Peer) -> None:
    peer.close()
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    await proc.wait()


def _folders(root: Path, owner: int) -> tuple[Path, Path]:
    """The data directory with a secret in it and a folder outside the runner's, both owned by
    ``owner`` (the runner's own user: file modes alone would let it in)."""
    data, outside = root / "data", root / "outside"
    data.mkdir(mode=0o700)
    outside.mkdir(mode=0o700)
    (data / "secret.txt").write_text("JWT_SECRET=server-only")
    for path in (data, data / "secret.txt", outside):
        os.chown(path, owner, owner)
    return data, outside


def _contained(seen: dict[str, Any]) -> None:
    """What every runner on Linux shows, whoever started it."""
    assert seen["env"] == ["HOME", "LANG", "PATH", "PYTHONDONTWRITEBYTECODE"]
    for probe in (
        "postgres",
        "redis",
        "listen",
        "data_list",
        "secret_stat",
        "secret_read",
        "write_outside",
        "fork",
        "spawn",
        "unshare",
    ):
        assert "refused" in seen[probe], (probe, seen[probe])
    assert seen["write_own"] == {"done": 4}
    assert seen["thread"] == {"done": True}  # the seccomp filter lets threads start


async def test_a_runner_started_by_an_unprivileged_user_has_no_network_nor_data_directory(base):
    runner_uid = NOBODY if os.geteuid() == 0 else os.geteuid()
    (base / "work").mkdir()
    data, outside = _folders(base, runner_uid)
    proc, peer, declared = await _runner(base / "work", data, unprivileged=True)
    try:
        seen = await _probe(peer, data, outside)
    finally:
        await _stop(proc, peer)
    _contained(seen)
    assert seen["uid"] == runner_uid and declared["asked"] == []
    assert not (outside / "planted").exists()
    if _userns_allowed():
        # In its own user namespace: a network namespace with only a loopback that is down, and
        # a mount namespace where the data directory is an empty folder of mode 000.
        assert declared["missing"] == ["separate user (not root: it runs as the server's user)"]
        assert seen["interfaces"] == {"done": ["lo"]}
        assert seen["data_stat"] == {"done": "0o0"}
    else:  # the kernel allows none: each namespace it could not make is named for the warning
        assert [m.split(" (")[0] for m in declared["missing"]][:3] == [
            "user namespace",
            "network namespace",
            "mount namespace",
        ]


async def test_a_runner_started_by_root_runs_as_nobody_in_namespaces_of_its_own(base):
    (base / "work").mkdir()
    data, outside = _folders(base, os.geteuid())
    # A folder to hide that holds the runner's own is left as it is, and the warning names it.
    work = base / "work"
    proc, peer, declared = await _runner(work, data, unprivileged=False, hidden=(work,))
    try:
        seen = await _probe(peer, data, outside)
    finally:
        await _stop(proc, peer)
    _contained(seen)
    if os.geteuid() == 0:
        assert declared["missing"] == [f"hiding {work} (it holds {work / 'bundle'}, which the runner needs)"]
        assert seen["uid"] == NOBODY
        assert seen["interfaces"] == {"done": ["lo"]}
        assert seen["data_stat"] == {"done": "0o0"}  # hidden by an empty tmpfs, not just unreadable


def test_the_landlock_and_seccomp_libraries_are_there_and_the_kernel_offers_them():
    """What the confinement relies on here: if a kernel lacks one, the runner's ``missing``
    names it (the tests above) and the server logs it loudly; on this platform both hold."""
    import landlockpy
    import seccompy

    assert confine.landlock_abi() == landlockpy.abi_version() >= 1
    assert seccompy.supported()


LOOKUPS = """
import ctypes.util, json, os, sys
looked = []
real = ctypes.util.find_library
ctypes.util.find_library = lambda name: looked.append(name) or real(name)
from extensions_sdk import confine
missing = confine.apply(json.loads(os.environ["SVC_EXT_RUNNER"]))
import landlockpy._syscall, seccompy._syscall
print(json.dumps({"looked": looked, "missing": missing,
                  "libc": [m._libc._name for m in (landlockpy._syscall, seccompy._syscall)]}))
"""


def test_confinement_loads_the_c_library_by_its_soname(tmp_path):
    """-- defects: seccompy and landlockpy asked ``ctypes.util.find_library("c")``, which runs
    ``ldconfig -p`` in a subprocess each time (about 8 ms of every runner start; after the seccomp
    filter the fork fails and landlockpy fell back to ``CDLL(None)``): the confinement hands them
    glibc's soname instead
    (bench/runner_start_bench.py measures it)."""
    import subprocess

    from plugins.extensions.host import scrubbed_env

    workdir, data = tmp_path / "work", tmp_path / "data"
    workdir.mkdir()
    data.mkdir()
    workdir.chmod(0o777)
    config = {"name": "probe", "entry": "probe", "workdir": str(workdir), "readable": _readable(),
              "hidden": [str(data)], "limits": {"open_files": 64, "processes": 64}}
    root = str(Path(__file__).resolve().parents[2])
    child = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {root!r})\n" + LOOKUPS],
                           env=scrubbed_env(config), cwd=workdir, capture_output=True, text=True, timeout=60,
                           start_new_session=True)
    assert child.returncode == 0, child.stderr
    seen = json.loads(child.stdout)
    assert not any(m.startswith(("seccomp", "Landlock")) for m in seen["missing"]), seen
    assert "c" not in seen["looked"], seen
    assert seen["libc"] == ["libc.so.6", "libc.so.6"]
