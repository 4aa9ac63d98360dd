"""OS-level limits the sandbox child applies to itself once its imports are done.

The policy (RestrictedPython) is the first wall; these are the second, for whatever slips past it:

* RLIMIT_AS: address space = what the child already maps after importing numpy/PIL (a few hundred
  MB of mostly shared libraries) + the program's memory budget. A fixed RLIMIT_AS would either
  starve the imports or give the program far more than asked, so the budget is relative.
* RLIMIT_CPU: set per step (soft limit = CPU used so far + the step's budget), so a long episode
  is not killed by the sum of its steps; SIGXCPU then ends the child.
* RLIMIT_NOFILE = 0: no new file descriptor at all (no open, socket, pipe); the socket to the parent
  and stdio are already open.
* RLIMIT_NPROC = 0: no fork, no thread. Root ignores it, so a child started as root first drops
  to the ``nobody`` user (which also takes away write access to the file system).
* RLIMIT_FSIZE: small, for the already-open stderr log; RLIMIT_CORE = 0.
"""

from __future__ import annotations

import os
import resource
import signal

NOBODY_UID = 65534
NOBODY_GID = 65534


def address_space_bytes() -> int:
    """Current virtual memory size of this process (Linux /proc; 0 when unknown)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


def _set(limits: dict[str, str], name: str, which: int, value: int) -> None:
    try:
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))  # hard too: nothing in the child raises it again
        limits[name] = str(value)
    except (ValueError, OSError) as exc:
        limits[name] = f"failed: {exc}"


def drop_privileges() -> str:
    """Become ``nobody`` when running as root (RLIMIT_NPROC does not bind root)."""
    if os.geteuid() != 0:
        return f"kept uid {os.geteuid()} (not root)"
    try:
        os.setgroups([])
        os.setgid(NOBODY_GID)
        os.setuid(NOBODY_UID)
        return f"uid {NOBODY_UID} (nobody)"
    except OSError as exc:
        return f"failed: {exc}"


def apply_child_limits(memory_mb: int, *, fsize_bytes: int = 1 << 20, drop_root: bool = True) -> dict[str, str]:
    """Apply the per-process limits; returns what was applied (or why not), for the parent to report.

    Must run after every import the child will ever need: afterwards no file can be opened.
    """
    limits: dict[str, str] = {}
    baseline = address_space_bytes()
    # Writes past RLIMIT_FSIZE should fail with EFBIG rather than kill the child.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    limits["user"] = drop_privileges() if drop_root else f"kept uid {os.geteuid()}"
    _set(limits, "core", resource.RLIMIT_CORE, 0)
    _set(limits, "fsize", resource.RLIMIT_FSIZE, fsize_bytes)
    if baseline:
        _set(limits, "as", resource.RLIMIT_AS, baseline + memory_mb * 1024 * 1024)
        limits["as_baseline_mb"] = str(baseline // (1024 * 1024))
    else:
        limits["as"] = "failed: address space unknown"
    _set(limits, "nproc", resource.RLIMIT_NPROC, 0)
    _set(limits, "nofile", resource.RLIMIT_NOFILE, 0)  # last: nothing can be opened afterwards
    return limits


def set_step_cpu_limit(cpu_s: float) -> None:
    """Allow ``cpu_s`` more seconds of CPU from now (soft limit; SIGXCPU ends the child)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = usage.ru_utime + usage.ru_stime
    soft = int(used + max(1.0, cpu_s)) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
