"""Unprivileged confinement a process applies to itself: rlimits, Landlock, seccomp, a dropped uid.

Runs inside the sandbox child (before the generated code) and in the start-up probe, so it
imports only the standard library. Landlock and seccomp need no privileges (only
``no_new_privs``), which is what remains where user namespaces are refused (default Docker).
Linux x86-64 only for seccomp; everything degrades to "unavailable", never to an exception
at import.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import struct
from collections.abc import Iterable

__all__ = [
    "ConfineError",
    "apply_rlimits",
    "drop_capabilities",
    "drop_privileges",
    "landlock_abi",
    "landlock_restrict",
    "seccomp_available",
    "seccomp_restrict",
    "set_no_new_privs",
]

_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_PR_SET_NO_NEW_PRIVS = 38
_PR_GET_SECCOMP = 21
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_PR_CAPBSET_READ, _PR_CAPBSET_DROP = 23, 24
_SYS_CAPSET = 91 if platform.machine() == "aarch64" else 126

# Landlock filesystem rights (ABI 1..5), network rights (ABI 4), scopes (ABI 6).
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1, 2, 4, 8
_FS_ALL_V1 = (1 << 13) - 1
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FILE_ONLY_RIGHTS = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1, 2

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int


class ConfineError(OSError):
    """A confinement step the child asked for could not be applied."""


def _check(rc: int, what: str) -> int:
    if rc < 0:
        err = ctypes.get_errno()
        raise ConfineError(err, f"{what}: {os.strerror(err)}")
    return rc


def apply_rlimits(
    cpu_seconds: int, memory_bytes: int, file_size_bytes: int, open_files: int, processes: int | None
) -> None:
    """Lower this process's limits (inherited by whatever it spawns). CPU counts from now."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(used.ru_utime + used.ru_stime) + max(1, int(cpu_seconds))
    limits = [
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_AS, memory_bytes),
        (resource.RLIMIT_FSIZE, file_size_bytes),
        (resource.RLIMIT_NOFILE, open_files),
        (resource.RLIMIT_CORE, 0),
    ]
    if processes is not None:
        limits.append((resource.RLIMIT_NPROC, processes))
    for which, value in limits:
        soft, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))


def drop_privileges(uid: int, gid: int) -> None:
    """Become ``uid``/``gid`` with no supplementary groups and no capabilities (needs root)."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


def drop_capabilities() -> None:
    """Give up every capability, the bounding set included, so that even an exec as root
    regains none (a root child could otherwise raise its own rlimits back)."""
    cap = 0
    while _libc.prctl(_PR_CAPBSET_READ, cap, 0, 0, 0) >= 0:
        _check(_libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), f"prctl(CAPBSET_DROP, {cap})")
        cap += 1
    header = struct.pack("=Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = bytes(24)  # two __user_cap_data_struct: effective, permitted, inheritable all zero
    hbuf, dbuf = ctypes.create_string_buffer(header, 8), ctypes.create_string_buffer(data, 24)
    _check(_libc.syscall(_SYS_CAPSET, hbuf, dbuf), "capset")


def set_no_new_privs() -> None:
    """No setuid binary can give privileges back; required for Landlock and seccomp."""
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when unsupported or disabled."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"):
        return 0
    rc = _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(0, int(rc))


def _handled_fs(abi: int) -> int:
    rights = _FS_ALL_V1
    if abi >= 2:
        rights |= _FS_REFER
    if abi >= 3:
        rights |= _FS_TRUNCATE
    if abi >= 5:
        rights |= _FS_IOCTL_DEV
    return rights


def _add_path(ruleset: int, path: str, rights: int, is_dir: bool) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        if not is_dir:
            rights &= _FILE_ONLY_RIGHTS
        attr = struct.pack("=Qi", rights, fd)  # struct landlock_path_beneath_attr (packed)
        buf = ctypes.create_string_buffer(attr, len(attr))
        _check(_libc.syscall(_SYS_LANDLOCK_ADD_RULE, ruleset, 1, buf, 0), f"landlock_add_rule({path})")
    finally:
        os.close(fd)


def landlock_restrict(read_paths: Iterable[str], write_paths: Iterable[str], device_paths: Iterable[str]) -> int:
    """Allow reading ``read_paths``, writing beneath ``write_paths``, nothing else; no TCP, no
    signals or abstract sockets outside this process tree (where the ABI knows them).

    Returns the ABI used. Paths that do not exist are skipped.
    """
    abi = landlock_abi()
    if abi < 1:
        raise ConfineError(errno.ENOSYS, "Landlock is not available")
    handled = _handled_fs(abi)
    fields = [handled]
    if abi >= 4:
        fields.append(_NET_BIND_TCP | _NET_CONNECT_TCP)
    if abi >= 6:
        fields.append(_SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL)
    attr = struct.pack(f"={len(fields)}Q", *fields)
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = _check(
        _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), 0), "landlock_create_ruleset"
    )
    try:
        read = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
        for rights, paths in (
            (read, read_paths),
            (handled, write_paths),
            (read | _FS_WRITE_FILE | (handled & _FS_IOCTL_DEV), device_paths),
        ):
            for path in dict.fromkeys(paths):
                if os.path.exists(path):
                    _add_path(ruleset, path, rights, os.path.isdir(path))
        set_no_new_privs()
        _check(_libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return abi


# --- seccomp: a hand-assembled classic-BPF deny list (x86-64) --------------------------------

_AUDIT_ARCH_X86_64 = 0xC000003E
_RET_ALLOW, _RET_KILL_PROCESS = 0x7FFF0000, 0x80000000
_LD_ABS_W, _JA, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x05, 0x15, 0x35, 0x45, 0x06
_NR_SOCKET, _NR_CLONE, _NR_KILL, _NR_TGKILL, _NR_CLONE3 = 41, 56, 62, 234, 435
_CLONE_NEW_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x80
# Denied with EPERM: namespaces and mounts, tracing other processes, kernel keyrings, BPF,
# modules, reboot/swap/clock, io_uring (bypasses seccomp), and leaving the process group
# (setsid/setpgid), so that killing the group at the end kills every process the code started.
_DENIED = {
    101: "ptrace",
    103: "syslog",
    109: "setpgid",
    112: "setsid",
    155: "pivot_root",
    161: "chroot",
    163: "acct",
    164: "settimeofday",
    165: "mount",
    166: "umount2",
    167: "swapon",
    168: "swapoff",
    169: "reboot",
    170: "sethostname",
    171: "setdomainname",
    172: "iopl",
    173: "ioperm",
    175: "init_module",
    176: "delete_module",
    179: "quotactl",
    227: "clock_settime",
    246: "kexec_load",
    248: "add_key",
    249: "request_key",
    250: "keyctl",
    272: "unshare",
    298: "perf_event_open",
    300: "fanotify_init",
    303: "name_to_handle_at",
    304: "open_by_handle_at",
    308: "setns",
    310: "process_vm_readv",
    311: "process_vm_writev",
    313: "finit_module",
    320: "kexec_file_load",
    321: "bpf",
    323: "userfaultfd",
    425: "io_uring_setup",
    426: "io_uring_enter",
    427: "io_uring_register",
    428: "open_tree",
    429: "move_mount",
    430: "fsopen",
    431: "fsconfig",
    432: "fsmount",
    433: "fspick",
    442: "mount_setattr",
    159: "adjtimex",
    305: "clock_adjtime",
    129: "rt_sigqueueinfo",
    200: "tkill",
    297: "rt_tgsigqueueinfo",
    424: "pidfd_send_signal",
}


def seccomp_available() -> bool:
    """Whether this kernel and architecture support the filter below."""
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        return False
    return _libc.prctl(_PR_GET_SECCOMP, 0, 0, 0, 0) >= 0


def _deny_pid_argument(nr: int, pids: list[int], negative: bool) -> list[tuple[int, int, int, int]]:
    """EPERM for syscall ``nr`` when its first argument is one of ``pids`` (or negative);
    leaves the syscall number in the accumulator for the checks after it."""
    checks = ([(_JSET_K, 0x80000000)] if negative else []) + [(_JEQ_K, pid & 0xFFFFFFFF) for pid in pids]
    n = len(checks)
    block = [(_JEQ_K, 0, n + 3, nr), (_LD_ABS_W, 0, 0, 16)]
    block += [(op, n - i, 0, k) for i, (op, k) in enumerate(checks)]
    return [*block, (_JA, 0, 0, 1), (_RET_K, 0, 0, 0x00050000 | errno.EPERM), (_LD_ABS_W, 0, 0, 0)]


def _filter_program(protected: list[int]) -> list[tuple[int, int, int, int]]:
    eperm = 0x00050000 | errno.EPERM
    prog: list[tuple[int, int, int, int]] = [
        (_LD_ABS_W, 0, 0, 4),  # arch
        (_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        (_RET_K, 0, 0, _RET_KILL_PROCESS),
        (_LD_ABS_W, 0, 0, 0),  # syscall number
        (_JGE_K, 0, 1, 0x40000000),  # the x32 ABI: refuse
        (_RET_K, 0, 0, eperm),
        (_JEQ_K, 0, 1, _NR_CLONE3),  # pointer argument: make libc fall back to clone()
        (_RET_K, 0, 0, 0x00050000 | errno.ENOSYS),
    ]
    for nr in sorted(_DENIED):
        prog += [(_JEQ_K, 0, 1, nr), (_RET_K, 0, 0, eperm)]
    prog += [
        # No new sockets of any family: no network, and no connecting to the host's Unix sockets
        # (Landlock does not cover connect(); socketpair() stays allowed).
        (_JEQ_K, 0, 1, _NR_SOCKET),
        (_RET_K, 0, 0, 0x00050000 | errno.EACCES),
        # No signals to process groups or to everyone (kill(-1)), nor to the parent and the agent:
        # where Landlock cannot scope signals, a child that stayed root could otherwise kill them.
        *_deny_pid_argument(_NR_KILL, protected, negative=True),
        *_deny_pid_argument(_NR_TGKILL, protected, negative=False),
        (_JEQ_K, 0, 3, _NR_CLONE),
        (_LD_ABS_W, 0, 0, 16),  # args[0]: clone flags
        (_JSET_K, 0, 1, _CLONE_NEW_NAMESPACES),
        (_RET_K, 0, 0, eperm),
        (_RET_K, 0, 0, _RET_ALLOW),
    ]
    return prog


def seccomp_restrict(protected: Iterable[int] = ()) -> int:
    """Install the deny-list filter on this process (and all it spawns); ``protected`` pids
    (besides the parent) may not be signalled. Returns the filter's length."""
    if not seccomp_available():
        raise ConfineError(errno.ENOSYS, "seccomp filters are not available here")
    prog = _filter_program(sorted({os.getppid(), *protected} - {0, 1}))
    raw = b"".join(struct.pack("=HBBI", code, jt, jf, k) for code, jt, jf, k in prog)
    filt = ctypes.create_string_buffer(raw, len(raw))
    fprog = struct.pack("=HxxxxxxQ", len(prog), ctypes.addressof(filt))  # struct sock_fprog
    fbuf = ctypes.create_string_buffer(fprog, len(fprog))
    set_no_new_privs()
    _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, fbuf, 0, 0), "prctl(SET_SECCOMP)")
    return len(prog)
