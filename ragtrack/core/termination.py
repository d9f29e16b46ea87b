"""Signals as exceptions, so that a killed run ends KILLED instead of staying RUNNING.

Python turns SIGINT into `KeyboardInterrupt`; SIGTERM (sent by `timeout`, CI cancellation,
`docker stop`, Slurm) and SIGHUP (a closed terminal) kill the process without unwinding, and
every `finally` that would have ended the MLflow run is skipped. `handle_termination`
makes them raise `Terminated`, which unwinds like `KeyboardInterrupt`.

Once the first signal has been raised, later ones are held back until the block exits, so
that the clean-up it set off (ending runs, stopping workers) is not itself interrupted.
SIGKILL cannot be caught: runs of a process that vanished are reaped later (see
`ragtrack.tracking.reaper`).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = [
    "Terminated",
    "deferred",
    "exit_code",
    "exit_if_stopped",
    "handle_termination",
    "hold",
    "hold_ctrl_c",
    "release",
    "watch_parent",
]

SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class Terminated(BaseException):
    """SIGTERM or SIGHUP, raised like `KeyboardInterrupt` (a BaseException: `except Exception` lets it
    pass)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    def __str__(self) -> str:
        return f"terminated by {signal.Signals(self.signum).name}"


def exit_code(error: BaseException) -> int:
    """The shell's convention: 128 + signal number (143 SIGTERM, 129 SIGHUP, 130 SIGINT)."""
    if isinstance(error, Terminated):
        return 128 + error.signum
    if isinstance(error, KeyboardInterrupt):
        return 128 + signal.SIGINT
    return 1


_state = threading.local()
_watching = False  # one watcher per worker process, however many jobs it runs
_orphaned = threading.Event()
_ORPHAN_GRACE_S = 60.0  # time an orphaned worker gets to end its run before it exits regardless


@contextmanager
def handle_termination(before_raise: Callable[[int], None] | None = None) -> Iterator[None]:
    """Within the block, SIGTERM/SIGHUP raise `Terminated` and SIGINT `KeyboardInterrupt`, once.

    `before_raise(signum)` runs first (e.g. to pass the signal on to worker processes). A
    signal the process was started ignoring stays ignored, as whoever started it meant:
    `nohup` ignores SIGHUP, and a shell script's `cmd &` SIGINT. Outside the main thread,
    or when an enclosing block already handles signals, this is a no-op: signal handlers
    belong to the main thread, and the outermost block owns them.
    """
    if threading.current_thread() is not threading.main_thread() or getattr(_state, "active", False):
        yield
        return
    fired: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if fired:
            return  # clean-up in progress: hold further signals back
        fired.append(signum)
        if before_raise is not None:
            before_raise(signum)
        if getattr(_state, "deferring", False):
            _state.pending = signum  # raised when the `deferred()` block ends
            return
        _raise_for(signum)

    previous = {s: signal.signal(s, on_signal) for s in SIGNALS if signal.getsignal(s) is not signal.SIG_IGN}
    _state.active = True
    try:
        yield
    finally:
        _state.active = False
        for s, handler in previous.items():
            signal.signal(s, handler)


def _raise_for(signum: int) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


@contextmanager
def deferred() -> Iterator[None]:
    """A signal that arrives inside the block is raised when it ends, not in the middle.

    For the few writes that must not be cut in half, such as marking a run FINISHED: the
    run is then ended, and the signal still ends the process.
    """
    if getattr(_state, "deferring", False):
        yield
        return
    hold()
    try:
        yield
    finally:
        release()


def hold_ctrl_c(held: bool) -> None:
    """Block SIGINT in the kernel (or unblock it, delivering one that came meanwhile): for the imports at
    start-up, when no Python handler should run at all (a Ctrl-C raised inside an import leaves that module
    half initialised). Children inherit a blocked signal, so unblock before starting any."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK if held else signal.SIG_UNBLOCK, {signal.SIGINT})


def hold() -> None:
    """From now on a signal `handle_termination` catches is held, as inside `deferred()`, until `release()`:
    for start-up after the imports (Hydra composing the config), where an exception raised mid-way leaves a
    config half built and is reported as some other error."""
    _state.deferring, _state.pending = True, None


def release() -> None:
    """End `hold()` (nothing when none is on): a signal held since is raised now."""
    if not getattr(_state, "deferring", False):
        return
    _state.deferring = False
    pending, _state.pending = _state.pending, None
    if pending is not None:
        _raise_for(pending)


def watch_parent(interval_s: float = 1.0) -> None:
    """In a worker process: SIGTERM ourselves when the parent process dies (we get re-parented).

    A sweep's launching process that is SIGKILLed cannot stop its workers; with this, each
    worker ends its own run KILLED instead of working on under a dead sweep, then exits
    (`exit_if_stopped`; after a grace period the watcher exits the process itself).
    """
    global _watching
    if _watching:
        return
    _watching = True
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            threading.Event().wait(interval_s)
        _orphaned.set()
        os.kill(os.getpid(), signal.SIGTERM)
        threading.Event().wait(_ORPHAN_GRACE_S)
        os._exit(128 + signal.SIGTERM)

    threading.Thread(target=watch, name="ragtrack-parent-watch", daemon=True).start()


def exit_if_stopped(error: BaseException | None) -> None:
    """After a job in a worker process: exit now when a signal stopped the job or the parent died.

    Its pool would keep it waiting for work, and a launcher passing a signal on waits for
    its workers to exit; the job's run is already ended by then.
    """
    if isinstance(error, (Terminated, KeyboardInterrupt)) or _orphaned.is_set():
        logging.shutdown()
        os._exit(
            exit_code(error) if isinstance(error, (Terminated, KeyboardInterrupt)) else 128 + signal.SIGTERM
        )
