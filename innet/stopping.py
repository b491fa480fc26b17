"""Ctrl-C and SIGTERM for the commands that bring a testbed up (`innet run`, the service): one
request to stop, honoured at once and never half-way.

    >>> signals = StopSignals().install()    # SIGINT and SIGTERM, whatever was inherited
    >>> try:
    ...     with held():                         # a teardown: a signal waits for its end
    ...         signal.raise_signal(signal.SIGINT)
    ...         print("torn down")
    ... except KeyboardInterrupt as stop:        # the first signal, raised (here at the end)
    ...     print("then stopped by", stop)
    torn down
    then stopped by SIGINT
    >>> signal.raise_signal(signal.SIGTERM)      # a second one: noted, hurries, never raises
    >>> signals.count, signals.hurry.is_set()
    (2, True)
    >>> signals.restore()

`install` sets the handler whatever the process inherited. A process started in the background
by a non-interactive shell (`cmd &` in a script, a CI job, a test runner started so) inherits
SIGINT *ignored*; Python then leaves it ignored, and so does every child it starts, so without
this Ctrl-C never reaches the run. `install` also unblocks both signals, which a process inherits
blocked from a parent that blocked them when it started it: one that arrived since, pending, is
then raised at once.

The first signal raises KeyboardInterrupt in the main thread wherever it finds it (building
the network, the machine check, a round's wait), except inside `held()` blocks (a teardown, a
record written): there it is raised when the outermost block ends. Later signals never raise,
so a teardown, once begun, runs to its end: each is logged and sets `hurry`, which stubborn
steps read to wait less.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

log = logging.getLogger(__name__)

SIGNALS = (signal.SIGINT, signal.SIGTERM)
Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


class StopSignals:
    """SIGINT and SIGTERM of this process, handled as one request to stop (see the module)."""

    def __init__(self) -> None:
        self.received: int | None = None  # the first signal's number
        self.count = 0  # signals received in all
        self.hurry = threading.Event()  # set by a second signal: teardown waits less
        self._held = 0  # depth of held() blocks in the main thread
        self._raised = False  # the first signal has been raised as KeyboardInterrupt
        self._previous: dict[int, Handler] = {}

    def install(self) -> StopSignals:
        """Handle both signals here (in the main thread), whatever was inherited."""
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)  # inherited blocked: one pending, now
        return self

    def restore(self) -> None:
        """The handlers this process had before `install`."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    @property
    def name(self) -> str | None:
        """The first signal's name (SIGINT, SIGTERM), None before one came."""
        return None if self.received is None else signal.Signals(self.received).name

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.count += 1
        if self.received is None:
            self.received = signum
            if self._held == 0:
                self._raise()
            return
        self.hurry.set()
        log.warning(
            "innet: %s again: still tearing down; it stops what it started before it exits",
            signal.Signals(signum).name,
        )

    def _raise(self) -> None:
        self._raised = True
        raise KeyboardInterrupt(signal.Signals(self.received or signal.SIGINT).name)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """A block no signal cuts short: the first one, if it comes here, is raised at the end
        of the outermost such block (in place of any exception on its way out, which becomes
        its context)."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if self._held == 0 and self.received is not None and not self._raised:
                self._raise()


def installed() -> StopSignals | None:
    """The StopSignals handling this process's SIGINT, if any."""
    owner = getattr(signal.getsignal(signal.SIGINT), "__self__", None)
    return owner if isinstance(owner, StopSignals) else None


def held() -> contextlib.AbstractContextManager[None]:
    """`StopSignals.held` of the installed handler; nothing where none is installed or off the
    main thread (signals raise only there)."""
    signals = installed()
    if signals is None or threading.current_thread() is not threading.main_thread():
        return contextlib.nullcontext()
    return signals.held()


def hurried() -> bool:
    """Whether a second signal asked the teardown to be quick."""
    signals = installed()
    return signals is not None and signals.hurry.is_set()


def interrupted() -> bool:
    """Whether a stop signal has come (teardowns then skip their polite waits)."""
    signals = installed()
    return signals is not None and signals.received is not None
