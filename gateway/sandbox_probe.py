"""Why bubblewrap cannot start here, named: each thing the sandbox needs, tried on its own with a real bwrap.

``Sandbox.check`` says that the sandbox cannot start, with bubblewrap's own first line ("Can't mount proc on
/newroot/proc: Operation not permitted"). In a container that line does not say what to change. This probe
tries each requirement in the order the sandbox meets them and names the first that fails, with its cause
and the option that fixes it (docs/container.md has the measured matrix):

    bubblewrap       the binary (sandbox.bwrap, default "bwrap" on PATH) and prlimit (util-linux)
    user namespace   bwrap --unshare-user: refused by a kernel setting, AppArmor, or a seccomp profile
    /proc            bwrap --unshare-pid --proc /proc: refused while the container masks paths in /proc
    network          bwrap --unshare-net
    the sandbox      the gateway's own sandbox (seccomp filter, limits, no nested user namespaces)

    for step in diagnose(config.sandbox): print(step.line())       # `gateway sandbox check`
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gateway.config import SandboxConfig

__all__ = ["Step", "diagnose", "diagnose_config", "first_failure"]

PROC = Path("/proc")
TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Step:
    name: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'}  {self.name:16} {self.detail}"


def diagnose(config: SandboxConfig) -> list[Step]:
    """Every step up to and including the first that fails (all of them when the sandbox starts)."""
    if config.mode == "off":
        return [Step("the sandbox", True, "off (sandbox.mode: off): commands run unconfined, each marked so")]
    steps: list[Step] = []
    for step in _steps(config):
        steps.append(step)
        if not step.ok:
            break
    return steps


def diagnose_config(path: str | Path) -> list[Step]:
    """``diagnose`` for the sandbox settings of the gateway.yaml at ``path``, or the defaults when there is
    none yet (a container's first start, before ``gateway init``)."""
    if not Path(path).exists():
        return diagnose(SandboxConfig())
    from gateway.config import GatewayConfig

    return diagnose(GatewayConfig.load(path).sandbox)


def first_failure(config: SandboxConfig) -> Step | None:
    return next((step for step in diagnose(config) if not step.ok), None)


def _steps(config: SandboxConfig) -> Iterator[Step]:
    """The steps, each tried only once those before it passed."""
    binary = shutil.which(config.bwrap)
    if binary is None:
        yield Step(
            "bubblewrap",
            False,
            f"{config.bwrap!r} is not on PATH: install bubblewrap (Debian: apt-get install bubblewrap) or point "
            "sandbox.bwrap in gateway.yaml at it",
        )
        return
    if shutil.which("prlimit") is None:
        yield Step("bubblewrap", False, "'prlimit' is not on PATH: install util-linux")
        return
    yield Step("bubblewrap", True, f"{binary}, prlimit")
    base = [binary, "--unshare-user", "--ro-bind", "/", "/"]
    failed = _run([*base, "true"])
    yield Step("user namespace", True, "bwrap --unshare-user") if failed is None else _no_userns(failed)
    if failed is not None:
        return
    failed = _run([*base, "--unshare-pid", "--dev", "/dev", "--proc", "/proc", "true"])
    yield Step("/proc", True, "a new /proc in a new PID namespace") if failed is None else _no_proc(failed)
    if failed is not None:
        return
    failed = _run([*base, "--unshare-net", "true"])
    if failed is not None:
        yield Step("network", False, f"bwrap --unshare-net: {failed} (the container may lack CAP_NET_ADMIN in it)")
        return
    yield Step("network", True, "a new network namespace")
    from gateway.sandbox import Sandbox, SandboxUnavailable

    try:
        Sandbox(config).check()  # a new Sandbox probes afresh: its seccomp filter, limits, --disable-userns
    except SandboxUnavailable as exc:
        yield Step("the sandbox", False, exc.message)
        return
    yield Step("the sandbox", True, "the gateway's sandbox starts (seccomp filter, limits, no nested namespaces)")


def _run(argv: list[str]) -> str | None:
    """None when the command succeeded, else bwrap's first line (or how it failed)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    return (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[0]


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _no_userns(said: str) -> Step:
    """A refused user namespace, with the first cause this machine shows."""
    if _read(PROC / "sys/user/max_user_namespaces") == "0":
        cause = "user namespaces are disabled (sysctl user.max_user_namespaces = 0): set it above 0 on the host"
    elif "ENOSPC" in said:
        cause = (
            "no more user namespaces may be made from here: whatever runs this process forbids nested ones "
            "(a sandbox made with bwrap --disable-userns, say) or a max_user_namespaces limit is spent"
        )
    elif _read(PROC / "sys/kernel/unprivileged_userns_clone") == "0":
        cause = "unprivileged user namespaces are disabled (sysctl kernel.unprivileged_userns_clone = 0)"
    elif _read(PROC / "sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
        cause = (
            "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1): "
            "docker run --security-opt apparmor=unconfined, or an AppArmor profile that allows userns for bwrap"
        )
    elif _seccomp_mode() == "2":
        cause = (
            "a seccomp filter refuses it (Docker's default profile refuses unshare(CLONE_NEWUSER)): "
            "docker run --security-opt seccomp=unconfined (or a profile allowing unshare and clone with "
            "namespace flags); Kubernetes: securityContext.seccompProfile.type: Unconfined"
        )
    else:
        cause = "the kernel or the container runtime refuses it"
    return Step("user namespace", False, f"bwrap --unshare-user: {said}: {cause}")


def _no_proc(said: str) -> Step:
    masked = _masked_in_proc()
    if masked:
        shown = ", ".join(masked[:4]) + (", ..." if len(masked) > 4 else "")
        cause = (
            f"this /proc has paths mounted over ({shown}: a container runtime's masked and read-only paths), "
            "and the kernel refuses a new /proc while what they hide is hidden: "
            "podman run --security-opt unmask=/proc/*; docker run --security-opt systempaths=unconfined; "
            "Kubernetes: securityContext.procMount: Unmasked (needs hostUsers: false)"
        )
    else:
        cause = "the kernel refuses a new /proc here"
    return Step("/proc", False, f"bwrap --proc /proc: {said}: {cause}")


def _masked_in_proc() -> list[str]:
    """Mount points below /proc (a container runtime's masked and read-only paths)."""
    text = _read(PROC / "self/mountinfo") or ""
    points = [line.split()[4] for line in text.splitlines() if len(line.split()) > 4]
    return sorted({p for p in points if p.startswith("/proc/")})


def _seccomp_mode() -> str | None:
    for line in (_read(PROC / "self/status") or "").splitlines():
        if line.startswith("Seccomp:"):
            return line.split()[1]
    return None
