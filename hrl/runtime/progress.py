"""The train driver's terminal: Ctrl-C handling and the progress bar."""

from __future__ import annotations

import math
import signal
import sys
import threading
import time

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)


class Interrupt:
    """SIGINT and SIGTERM handling (Ctrl-C, `timeout`, a scheduler, `hrl launch` passing one
    on): the first asks for a clean stop, the second raises at once."""

    def __init__(self):
        self.requested = False
        self._previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._previous = {sig: signal.signal(sig, self._handle)
                              for sig in (signal.SIGINT, signal.SIGTERM)}
        return self

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        return False


PLAIN_EVERY_S = 10.0


class ProgressBar:
    """rich progress bar with env steps/s, SGD updates/s and the recent return."""

    def __init__(self, enabled: bool, total: int, done: int, title: str):
        self.enabled = enabled
        if not enabled:
            return

        self.bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(bar_width=20),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rates]}"),
            TextColumn("return {task.fields[ret]}"),
            TextColumn("{task.fields[solved]}"),
            TimeElapsedColumn(),
            refresh_per_second=4,
        )
        self.task = self.bar.add_task(title, total=total, completed=done, rates="", ret="-",
                                      solved="")
        # Not a terminal (a launch's process 0 under a scheduler, output to a file): no live
        # bar, a plain line every PLAIN_EVERY_S seconds instead, so progress still shows.
        self.plain = not self.bar.console.is_terminal
        self.title, self.total, self.last_line = title, total, -math.inf

    def __enter__(self):
        if self.enabled:
            self.bar.__enter__()
        return self

    def update(self, done: int, env_rate: float, sgd_rate: float, recent: float | None,
               samples_per_insert: str, solved: str | None = None):
        if self.enabled:
            ret = "-" if recent is None else f"{recent:.1f}"
            rates = f"{env_rate:,.0f} env/s {sgd_rate:,.0f} sgd/s {samples_per_insert}"
            self.bar.update(self.task, completed=done, rates=rates, ret=ret, solved=solved or "")
            if self.plain and time.monotonic() - self.last_line >= PLAIN_EVERY_S:
                self.last_line = time.monotonic()
                print(f"{self.title}: {done:,}/{self.total:,} env steps, {rates}, return {ret}",
                      file=sys.stdout, flush=True)

    def __exit__(self, *exc):
        if self.enabled:
            self.bar.__exit__(*exc)
        return False

