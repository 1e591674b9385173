"""What an extension's runner process does to itself before it imports the extension: the
confinement docs/extensions.md lists ("What is enforced where").

On Linux, in this order:

- namespaces of its own. Started by root: a network namespace (no interface but a loopback that
  is down) and a mount namespace. Started by another user: a user namespace first, where the
  kernel allows unprivileged ones (``kernel.unprivileged_userns_clone``,
  ``user.max_user_namespaces``), and inside it the same network and mount namespaces; the
  capabilities the user namespace gave are dropped once the mounts are made;
- in the mount namespace, each folder to hide (the data directory) is covered by an empty
  ``tmpfs`` of mode 000, and (root only) each folder ``nobody`` cannot search (``/root``) is
  covered by an empty ``tmpfs`` into which only the paths the runner reads are bound back,
  read-only;
- resource limits (address space, CPU seconds, open files, processes, file size, no core);
- another user (root only: ``nobody``), ``no_new_privs``;
- a seccomp filter (``seccompy``): no new process (``fork``, ``vfork``, ``clone`` without
  ``CLONE_THREAD``, ``clone3``), no new namespace and no mount;
- a Landlock domain (``landlockpy``, no root needed): files are read only under the paths Python
  needs and written only in the runner's own folder, no TCP (ABI 4+), no signal and no abstract
  Unix socket outside the domain (ABI 6+), no mount.

Each step that the platform refuses is returned by name, and the server logs a loud warning for
each one. Namespaces and mounts go through ``unshare(2)`` and ``mount(2)`` with ``ctypes``
(Python 3.11 has no ``os.unshare``); seccomp and Landlock through their libraries.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import platform
import resource
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWUSER, CLONE_THREAD = 0x40000000, 0x00020000, 0x10000000, 0x00010000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS = 38
NOBODY = 65534
_CAP_VERSION_3 = 0x20080522
_X32 = 0x40000000  # x86-64's x32 ABI: the same calls with this bit in their number
# System calls a runner never makes once confined: new processes are refused by their own rules.
_NO_NAMESPACES = ("unshare", "setns", "mount", "umount2", "pivot_root")


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


@contextlib.contextmanager
def _libc_by_soname() -> Iterator[None]:
    """While seccompy and landlockpy load the C library: ``ctypes.util.find_library("c")``
    answers glibc's soname (``libc.so.6``) at once. Both libraries ask it once per process, and on
    Linux it runs ``ldconfig -p`` in a subprocess each time: about 8 ms of a runner's start, and a
    fork that, once the seccomp filter holds, is refused anyway. Another C library (musl) is
    looked up as before. Only the runner's own process, before it imports the extension."""
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        glibc = ""
    if not glibc.startswith("glibc"):
        yield
        return
    real = ctypes.util.find_library

    def find_library(name: str) -> str | None:
        return "libc.so.6" if name == "c" else real(name)

    ctypes.util.find_library = find_library
    try:
        yield
    finally:
        ctypes.util.find_library = real


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers (0: none)."""
    if not sys.platform.startswith("linux"):
        return 0
    import landlockpy

    return landlockpy.abi_version()


def _landlock(readable: list[str], writable: list[str], *, own_network: bool) -> str | None:
    """Enter a Landlock domain; the reason it could not, or what it lacks, or None. Every
    filesystem and network right the kernel knows is handled (so refused but for the rules
    below), and signals and abstract Unix sockets are scoped to the domain. What the kernel's
    ABI cannot refuse of the network matters only without a network namespace of its own."""
    import landlockpy
    from landlockpy import AccessFS, RestrictFlag, Ruleset, Scope

    abi = landlockpy.abi_version()
    if abi < 1:
        return "Landlock (the kernel offers none)"
    read = AccessFS.EXECUTE | AccessFS.READ_FILE | AccessFS.READ_DIR
    on_file = (
        AccessFS.EXECUTE | AccessFS.WRITE_FILE | AccessFS.READ_FILE | AccessFS.TRUNCATE | AccessFS.IOCTL_DEV
    )
    try:
        with Ruleset(scoped=Scope.ABSTRACT_UNIX_SOCKET | Scope.SIGNAL) as ruleset:
            rules = [(p, read) for p in readable] + [(p, ruleset.handled_fs) for p in writable]
            for path, rights in rules:
                if not os.path.exists(path):
                    continue  # a path that is not there grants nothing
                ruleset.allow_path(path, rights if os.path.isdir(path) else rights & on_file)
            ruleset.restrict(RestrictFlag.TSYNC)
    except OSError as exc:
        return f"Landlock ({type(exc).__name__}: {exc})"
    missing = [] if abi >= 4 or own_network else ["TCP rules"]
    missing += [] if abi >= 10 or own_network else ["UDP rules"]
    missing += [] if abi >= 6 else ["signal scoping"]
    return f"Landlock ABI {abi} lacks {', '.join(missing)}" if missing else None


def _blocker(path: str) -> Path | None:
    """The outermost folder above ``path`` (or itself) that other users cannot search
    (``/root``), or None when every one of them is searchable."""
    current = Path(path).resolve()
    for folder in reversed([current, *current.parents]):
        try:
            if folder.is_dir() and not folder.stat().st_mode & 0o001:
                return folder
        except OSError:
            return folder
    return None


def _reachable_by_others(path: str) -> bool:
    """Whether a user other than the owner can reach ``path`` (every folder above it searchable)."""
    return _blocker(path) is None


def _user_namespace() -> str | None:
    """Enter a user namespace of its own, mapping only the current user and group onto
    themselves, so that a user other than root can make network and mount namespaces; the
    reason it could not, or None."""
    switch = Path("/proc/sys/kernel/unprivileged_userns_clone")  # Debian's and Ubuntu's kernels
    if switch.exists() and switch.read_text().strip() == "0":
        return "kernel.unprivileged_userns_clone is 0"
    most = Path("/proc/sys/user/max_user_namespaces")
    if most.exists() and most.read_text().strip() == "0":
        return "user.max_user_namespaces is 0"
    uid, gid = os.geteuid(), os.getegid()
    if _libc().unshare(CLONE_NEWUSER) != 0:
        return f"unshare: {os.strerror(ctypes.get_errno())}"
    try:
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    except OSError as exc:
        return f"{exc.filename}: {exc.strerror}"
    return None


def _drop_capabilities() -> str | None:
    """Give up every capability (those a user namespace gave): no mount, no ``CAP_NET_ADMIN``,
    no ``CAP_DAC_OVERRIDE`` over its own namespaces afterwards."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    empty = (ctypes.c_uint32 * 6)()  # two {effective, permitted, inheritable}, all zero
    if _libc().capset(ctypes.byref(Header(_CAP_VERSION_3, 0)), empty) != 0:
        return f"dropping capabilities ({os.strerror(ctypes.get_errno())})"
    return None


def _mount_namespace() -> str | None:
    libc = _libc()
    if libc.unshare(CLONE_NEWNS) != 0:
        return f"mount namespace (unshare: {os.strerror(ctypes.get_errno())})"
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return f"mount namespace (private: {os.strerror(ctypes.get_errno())})"
    return None


def _hide(paths: list[str], kept: list[str]) -> list[str]:
    """Cover each folder of ``paths`` with an empty, read-only ``tmpfs`` of mode 000, in the
    mount namespace made before: the runner sees nothing in it. A folder that holds one of
    ``kept`` (what the runner reads or writes) is left as it is. What could not be hidden."""
    libc = _libc()
    missing: list[str] = []
    for path in paths:
        folder = Path(path).resolve()
        try:
            if not folder.is_dir():
                continue
        except OSError:
            continue  # a folder it cannot reach is hidden already
        holds = [k for k in kept if Path(k).resolve().is_relative_to(folder)]
        if holds:
            missing.append(f"hiding {folder} (it holds {holds[0]}, which the runner needs)")
            continue
        flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
        if libc.mount(b"tmpfs", str(folder).encode(), b"tmpfs", flags, b"mode=000,size=4k") != 0:
            missing.append(f"hiding {folder} (mount: {os.strerror(ctypes.get_errno())})")
    return missing


def _reveal(paths: list[str], workdir: str) -> str | None:
    """Make ``paths`` reachable by ``nobody`` in the mount namespace made before: over each
    folder that blocks them (``/root``, mode 0700) a small empty ``tmpfs`` (0755), into which
    each path alone is bound back, read-only. The rest of that folder is hidden. Root only; the
    reason it could not, or None."""
    libc = _libc()
    wanted: list[tuple[str, Path]] = []
    for path in paths:
        blocker = _blocker(path)
        if blocker is None:
            continue
        if blocker == Path("/") or Path(workdir).resolve().is_relative_to(blocker):
            return f"{blocker} blocks {path} and cannot be covered"
        wanted.append((str(Path(path).resolve()), blocker))
    if not wanted:
        return None
    kept = [(os.open(path, os.O_PATH | os.O_CLOEXEC), path) for path, _ in wanted]
    try:
        for blocker in sorted({b for _, b in wanted}):
            options = b"mode=0755,size=64k"
            if libc.mount(b"tmpfs", str(blocker).encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) != 0:
                return f"tmpfs over {blocker} ({os.strerror(ctypes.get_errno())})"
        for fd, path in kept:
            os.makedirs(path, exist_ok=True)
            target = path.encode()
            if libc.mount(f"/proc/self/fd/{fd}".encode(), target, None, MS_BIND | MS_REC, None) != 0:
                return f"bind {path} ({os.strerror(ctypes.get_errno())})"
            libc.mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    finally:
        for fd, _ in kept:
            os.close(fd)
    return None


def _seccomp() -> str | None:
    """A seccomp filter (``seccompy``): no new process (``fork``, ``vfork``, ``clone`` without
    ``CLONE_THREAD``, ``clone3``, which answers ENOSYS so that the C library falls back to
    ``clone`` for threads), no new namespace, no mount. The filter kills a call of another
    ABI than the native one (x86-64's x32 calls of the same names are refused too)."""
    import seccompy
    from seccompy import ArgCmp, CmpOp, Filter

    if not seccompy.supported():
        return "seccomp filter (the kernel offers none)"
    try:
        arch = seccompy.arch()
    except seccompy.UnsupportedError:
        return f"seccomp filter (no system call table for {platform.machine()})"
    rules = Filter()
    rules.allow("clone", args=[ArgCmp(0, CmpOp.MASKED_EQ, CLONE_THREAD, mask=CLONE_THREAD)])
    refused = ["clone", *(("fork", "vfork") if arch == "x86_64" else ()), *_NO_NAMESPACES]
    for name in refused:
        rules.errno(name, errno.EPERM)
    rules.errno("clone3", errno.ENOSYS)
    if arch == "x86_64":
        for name in [*refused, "clone3"]:
            rules.errno(_X32 | seccompy.syscall_nr(name), errno.EPERM)
    try:
        rules.load()
    except OSError as exc:
        return f"seccomp filter ({type(exc).__name__}: {exc})"
    return None


def _limit(kind: int, value: int) -> None:
    soft, hard = resource.getrlimit(kind)
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(kind, (value, value))


def apply(config: dict[str, Any]) -> list[str]:
    """Confine this process as ``config`` says (``workdir``, ``readable``, ``hidden``,
    ``limits``); the names of the protections the platform did not give."""
    missing: list[str] = []
    if not sys.platform.startswith("linux"):
        return ["every protection (not Linux: only the scrubbed environment and the folder hold)"]
    libc = _libc()
    root = os.geteuid() == 0
    workdir = config["workdir"]
    readable = list(config.get("readable") or [])
    namespaces = True
    if not root:
        refused = _user_namespace()
        if refused:
            namespaces = False
            missing.append(f"user namespace ({refused})")
            missing.append("network namespace (not root, and no user namespace)")
            missing.append(
                "mount namespace (not root, and no user namespace): the data directory is not hidden"
            )
    own_network = namespaces and libc.unshare(CLONE_NEWNET) == 0
    if namespaces and not own_network:
        missing.append(f"network namespace (unshare: {os.strerror(ctypes.get_errno())})")
    needed = [sys.base_prefix, sys.prefix, *readable]
    needed = [p for p in dict.fromkeys(needed) if os.path.exists(p)]
    if namespaces:
        refused = _mount_namespace()
        if refused:
            missing.append(refused)
        else:
            missing += _hide(list(config.get("hidden") or []), [*needed, workdir])
            if root and any(not _reachable_by_others(p) for p in needed):
                refused = _reveal(needed, workdir)
                if refused:
                    missing.append(f"mount namespace ({refused})")
        if not root:
            refused = _drop_capabilities()
            if refused:
                missing.append(refused)
    limits = config.get("limits") or {}
    for kind, key in (
        (resource.RLIMIT_AS, "memory_bytes"),
        (resource.RLIMIT_CPU, "cpu_seconds"),
        (resource.RLIMIT_NOFILE, "open_files"),
        (resource.RLIMIT_NPROC, "processes"),
        (resource.RLIMIT_FSIZE, "file_bytes"),
    ):
        if limits.get(key):
            try:
                _limit(kind, int(limits[key]))
            except (ValueError, OSError) as exc:
                missing.append(f"rlimit {key} ({exc})")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    unreachable = [p for p in needed if not _reachable_by_others(p)]
    if root and unreachable:
        missing.append(f"separate user ({unreachable[0]} is not reachable by nobody)")
    elif root:
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
        except OSError as exc:
            missing.append(f"separate user ({exc})")
    else:
        missing.append("separate user (not root: it runs as the server's user)")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        missing.append("no_new_privs")
    with _libc_by_soname():
        refused = _seccomp()
        if refused:
            missing.append(refused)
        refused = _landlock(readable, [workdir], own_network=own_network)
        if refused:
            missing.append(refused)
    return missing
