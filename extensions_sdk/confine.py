"""What an extension's runner process does to itself before it imports the extension: the
confinement docs/extensions.md lists ("What is enforced where").

On Linux, in this order: a network namespace of its own (root only: the process sees no
interface but a loopback that is down), resource limits (address space, CPU seconds, open files,
processes, file size, no core), a mount namespace (root only, when Python or the code lies under
a folder ``nobody`` cannot search, such as ``/root``: that folder is covered by an empty tmpfs
and only the paths the runner reads are bound back, read-only), another user (root only:
``nobody``), ``no_new_privs``, a seccomp filter refusing new processes (x86-64), and a
Landlock domain (the kernel's own sandbox, no root needed): files are read only under the paths
Python needs and written only in the runner's own folder, no TCP connect or bind at all, no
signal to a process outside the domain. Landlock goes through the raw system calls with
``ctypes`` (three calls and two structs; the PyPI bindings were pre-releases when this was
written). Each step that the platform refuses is returned by name, and the server logs a loud
warning for each one.
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import struct
import sys
from pathlib import Path
from typing import Any

CLONE_NEWNET, CLONE_NEWNS = 0x40000000, 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
NOBODY = 65534
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on every Linux arch
_RULE_PATH_BENEATH = 1
_VERSION_FLAG = 1

# Filesystem rights by the Landlock ABI that introduced them.
_FS_V1 = (1 << 13) - 1  # execute .. make_sym
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FILE_RIGHTS = 1 | (1 << 1) | (1 << 2) | _FS_TRUNCATE | _FS_IOCTL_DEV  # what a rule on a file may hold
_READ = 1 | (1 << 2) | (1 << 3)  # execute, read_file, read_dir
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1, 2


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers (0: none)."""
    if not sys.platform.startswith("linux"):
        return 0
    found = _libc().syscall(_SYS_CREATE_RULESET, None, 0, _VERSION_FLAG)
    return max(int(found), 0)


def _landlock(readable: list[str], writable: list[str]) -> str | None:
    """Enter a Landlock domain; the reason it could not, or None."""
    abi = landlock_abi()
    if abi < 1:
        return "Landlock (the kernel offers none)"
    libc = _libc()
    handled = (
        _FS_V1
        | (_FS_REFER if abi >= 2 else 0)
        | (_FS_TRUNCATE if abi >= 3 else 0)
        | (_FS_IOCTL_DEV if abi >= 5 else 0)
    )
    net = (_NET_BIND_TCP | _NET_CONNECT_TCP) if abi >= 4 else 0
    scoped = (_SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL) if abi >= 6 else 0
    attr = struct.pack("<QQQ", handled, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    buffer = ctypes.create_string_buffer(attr[:size], size)
    ruleset = libc.syscall(_SYS_CREATE_RULESET, buffer, size, 0)
    if ruleset < 0:
        return f"Landlock (create_ruleset: errno {ctypes.get_errno()})"
    try:
        rules = [(p, _READ) for p in readable] + [(p, handled) for p in writable]
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a path that is not there grants nothing
            try:
                allowed = rights & handled
                if not Path(path).is_dir():
                    allowed &= _FILE_RIGHTS
                rule = ctypes.create_string_buffer(struct.pack("<Qi", allowed, fd), 12)
                if libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, rule, 0) < 0:
                    return f"Landlock (add_rule {path}: errno {ctypes.get_errno()})"
            finally:
                os.close(fd)
        if libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0) < 0:
            return f"Landlock (restrict_self: errno {ctypes.get_errno()})"
    finally:
        os.close(ruleset)
    missing = [] if abi >= 4 else ["no TCP"]
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


def _reveal(paths: list[str], workdir: str) -> str | None:
    """Make ``paths`` reachable by ``nobody`` in a mount namespace of this process's own: over
    each folder that blocks them (``/root``, mode 0700) a small empty ``tmpfs`` (0755), into
    which each path alone is bound back, read-only. The rest of that folder is hidden. Root
    only; the reason it could not, or None."""
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
    if libc.unshare(CLONE_NEWNS) != 0:
        return f"mount namespace (unshare: errno {ctypes.get_errno()})"
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return f"mount namespace (private: errno {ctypes.get_errno()})"
    kept = [(os.open(path, os.O_PATH | os.O_CLOEXEC), path) for path, _ in wanted]
    try:
        for blocker in sorted({b for _, b in wanted}):
            options = b"mode=0755,size=64k"
            if libc.mount(b"tmpfs", str(blocker).encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) != 0:
                return f"tmpfs over {blocker} (errno {ctypes.get_errno()})"
        for fd, path in kept:
            os.makedirs(path, exist_ok=True)
            target = path.encode()
            if libc.mount(f"/proc/self/fd/{fd}".encode(), target, None, MS_BIND | MS_REC, None) != 0:
                return f"bind {path} (errno {ctypes.get_errno()})"
            libc.mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    finally:
        for fd, _ in kept:
            os.close(fd)
    return None


def _seccomp_no_fork() -> str | None:
    """A seccomp filter: no new process (fork, vfork, clone without CLONE_THREAD, clone3), and
    no system call of another ABI. Threads still start. x86-64 only."""
    if platform.machine() != "x86_64":
        return f"seccomp fork filter (written for x86_64, this is {platform.machine()})"
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    program = [
        (ld, 0, 0, 4),
        (jeq, 0, 9, 0xC000003E),  # arch is x86-64, else EPERM
        (ld, 0, 0, 0),
        (jge, 7, 0, 0x40000000),  # the x32 ABI: EPERM
        (jeq, 6, 0, 57),
        (jeq, 5, 0, 58),
        (jeq, 5, 0, 435),  # fork, vfork: EPERM; clone3: ENOSYS
        (jeq, 0, 2, 56),
        (ld, 0, 0, 16),
        (jset, 0, 1, 0x10000),  # clone: only with CLONE_THREAD
        (ret, 0, 0, allow),
        (ret, 0, 0, eperm),
        (ret, 0, 0, enosys),
    ]
    raw = b"".join(struct.pack("<HBBI", *op) for op in program)
    filters = ctypes.create_string_buffer(raw, len(raw))
    prog = struct.pack("<HxxxxxxQ", len(program), ctypes.addressof(filters))
    fprog = ctypes.create_string_buffer(prog, len(prog))
    if _libc().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog, 0, 0) != 0:
        return f"seccomp fork filter (errno {ctypes.get_errno()})"
    return None


def _limit(kind: int, value: int) -> None:
    soft, hard = resource.getrlimit(kind)
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(kind, (value, value))


def apply(config: dict[str, Any]) -> list[str]:
    """Confine this process as ``config`` says (``workdir``, ``readable``, ``limits``); the names
    of the protections the platform did not give."""
    missing: list[str] = []
    if not sys.platform.startswith("linux"):
        return ["every protection (not Linux: only the scrubbed environment and the folder hold)"]
    libc = _libc()
    root = os.geteuid() == 0
    if not root:
        missing.append("network namespace (not root)")
    elif libc.unshare(CLONE_NEWNET) != 0:
        missing.append(f"network namespace (unshare: errno {ctypes.get_errno()})")
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
    needed = [sys.base_prefix, sys.prefix, *(config.get("readable") or [])]
    needed = [p for p in dict.fromkeys(needed) if os.path.exists(p)]
    if root and any(not _reachable_by_others(p) for p in needed):
        refused = _reveal(needed, config["workdir"])
        if refused:
            missing.append(f"mount namespace ({refused})")
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
        missing.append("separate user (not root)")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        missing.append("no_new_privs")
    refused = _seccomp_no_fork()
    if refused:
        missing.append(refused)
    refused = _landlock(list(config.get("readable") or []), [config["workdir"]])
    if refused:
        missing.append(refused)
    return missing
