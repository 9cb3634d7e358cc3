"""A child process that ends with its parent: actors never outlive their learner, and the
processes of an `hrl launch` stop when the launcher does (imports nothing that runs JAX)."""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def exit_with_parent(parent: int, signum: int = signal.SIGKILL, poll_s: float = 0.5) -> None:
    """Send this process `signum` when `parent` (the process that started it) ends in any way,
    a SIGKILL included: on Linux the kernel sends it (prctl PR_SET_PDEATHSIG); everywhere a
    daemon thread also polls the parent's pid every `poll_s` seconds (the fallback, and the
    check for a parent gone before this call). SIGKILL ends the process at once; a handled
    signal (SIGTERM in `hrl train`) lets it checkpoint first. Costs one thread that sleeps."""
    if os.uname().sysname == "Linux":
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signum))
        except (OSError, AttributeError):
            pass  # the poll below still holds

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os.kill(os.getpid(), signum)

    if os.getppid() != parent:
        os.kill(os.getpid(), signum)
        return
    threading.Thread(target=watch, name="hrl-parent-watch", daemon=True).start()


def parent_of(pid: int) -> int | None:
    """The parent pid of `pid` from /proc (None where there is no /proc or no such process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def children_named(pid: int, prefix: str) -> list[int]:
    """The processes whose parent is `pid` and whose command line starts with `prefix`."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")[0].decode()
        except OSError:
            continue
        if cmd.startswith(prefix) and parent_of(int(entry.name)) == pid:
            found.append(int(entry.name))
    return found


def exit_with_pid(pid: int, signum: int = signal.SIGKILL, poll_s: float = 0.5,
                  also: tuple[int, ...] = ()) -> None:
    """Send this process `signum` once process `pid` (on this host) is gone: for a process
    that `pid` did not start itself (a Ray worker, whose parent is Ray's raylet), so only a
    poll can tell. `also`: processes to send SIGKILL first (a local Ray's agents, which
    outlive their raylet). Costs one thread that sleeps."""

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def watch() -> None:
        while not gone():
            time.sleep(poll_s)
        for other in also:
            try:
                os.kill(other, signal.SIGKILL)
            except OSError:
                pass
        os.kill(os.getpid(), signum)

    threading.Thread(target=watch, name="hrl-learner-watch", daemon=True).start()
