"""The sandbox's seccomp filter: no new Unix-domain socket, so no host socket is reachable by path.

bubblewrap's network namespace hides the host's network, but not the sockets that live in the filesystem:
``connect("/var/tmp/db.sock")`` reaches a host listener (a database, a container runtime) through any
directory the sandbox can see. This classic BPF program makes ``socket(AF_UNIX, ...)`` fail with EPERM.
``socketpair`` stays allowed for stream and seqpacket pairs (born connected, they can never connect
elsewhere), not for datagram pairs (a datagram socket can ``sendto`` any path). ``io_uring_setup`` fails
too (io_uring can make sockets without the ``socket`` call). A syscall of another ABI than the host's (32-bit
``int 0x80`` on x86_64, x32, arm32 on aarch64) kills the process: the numbers below would not match it.

Standard library only: the egress launcher (gateway/egress_inside.py) loads this file by path inside the
sandbox and installs the filter on the command it starts.

    program = seccomp.program()        # bytes: struct sock_filter[], what ``bwrap --seccomp FD`` reads
    seccomp.install(program)           # or put it on this process (and what it execs) directly
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct
from dataclasses import dataclass

AF_UNIX = 1
SOCK_STREAM, SOCK_SEQPACKET = 1, 5
SOCK_TYPE_MASK = 0xF  # the type argument also carries SOCK_NONBLOCK and SOCK_CLOEXEC
X32_SYSCALL_BIT = 0x40000000

# classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h)
LD_W_ABS, JEQ_K, JGE_K, AND_K, RET_K = 0x20, 0x15, 0x35, 0x54, 0x06
RET_ALLOW, RET_KILL_PROCESS, RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
# offsets in struct seccomp_data: nr, arch, then the arguments (only their low 32 bits: the kernel reads an
# int, so a high word set by the caller must not hide AF_UNIX)
NR, ARCH, ARG0, ARG1 = 0, 4, 16, 24


class UnsupportedArch(Exception):
    """The filter does not know this machine's syscall numbers: the sandbox must not start."""


@dataclass(frozen=True)
class Arch:
    audit: int  # AUDIT_ARCH_* (linux/audit.h)
    socket: int
    socketpair: int
    io_uring_setup: int
    x32: bool = False  # the same audit arch also carries x32 syscalls (nr | X32_SYSCALL_BIT)


ARCHES = {
    "x86_64": Arch(audit=0xC000003E, socket=41, socketpair=53, io_uring_setup=425, x32=True),
    "aarch64": Arch(audit=0xC00000B7, socket=198, socketpair=199, io_uring_setup=425),
}
ARCHES["amd64"], ARCHES["arm64"] = ARCHES["x86_64"], ARCHES["aarch64"]


def program(machine: str | None = None) -> bytes:
    """The compiled filter for ``machine`` (default: this one); raises UnsupportedArch for any other."""
    name = machine or platform.machine()
    arch = ARCHES.get(name.lower())
    if arch is None:
        known = ", ".join(sorted({"x86_64", "aarch64"}))
        raise UnsupportedArch(f"the sandbox's seccomp filter knows {known}, not {name!r}")
    deny = RET_ERRNO | errno.EPERM
    # (code, jump-if-true label, jump-if-false label, k); labels are resolved to relative offsets below
    steps: list[tuple[str, tuple[int, str, str, int]]] = [
        ("", (LD_W_ABS, "", "", ARCH)),
        ("", (JEQ_K, "", "kill", arch.audit)),
        ("", (LD_W_ABS, "", "", NR)),
        *([("", (JGE_K, "kill", "", X32_SYSCALL_BIT))] if arch.x32 else []),
        ("", (JEQ_K, "socket", "", arch.socket)),
        ("", (JEQ_K, "socketpair", "", arch.socketpair)),
        ("", (JEQ_K, "deny", "allow", arch.io_uring_setup)),
        ("socket", (LD_W_ABS, "", "", ARG0)),
        ("", (JEQ_K, "deny", "allow", AF_UNIX)),
        ("socketpair", (LD_W_ABS, "", "", ARG1)),
        ("", (AND_K, "", "", SOCK_TYPE_MASK)),
        ("", (JEQ_K, "allow", "", SOCK_STREAM)),
        ("", (JEQ_K, "allow", "deny", SOCK_SEQPACKET)),
        ("allow", (RET_K, "", "", RET_ALLOW)),
        ("deny", (RET_K, "", "", deny)),
        ("kill", (RET_K, "", "", RET_KILL_PROCESS)),
    ]
    at = {label: i for i, (label, _) in enumerate(steps) if label}

    def offset(i: int, label: str) -> int:
        return at[label] - i - 1 if label else 0

    return b"".join(
        struct.pack("=HBBI", code, offset(i, jt), offset(i, jf), k) for i, (_, (code, jt, jf, k)) in enumerate(steps)
    )


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, PR_SET_DUMPABLE = 38, 22, 2, 4


def install(compiled: bytes) -> None:
    """Put ``compiled`` on this thread (inherited by every child and kept across exec); raises OSError."""
    libc = ctypes.CDLL(None, use_errno=True)
    fprog = _SockFprog(len(compiled) // 8, compiled)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.prctl(
        PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0
    ):
        number = ctypes.get_errno()
        raise OSError(number, f"cannot install the seccomp filter: {errno.errorcode.get(number, number)}")


def undumpable() -> None:
    """No other process of the same user may trace this one or write its memory (it stays unfiltered)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "cannot make the egress launcher undumpable")
