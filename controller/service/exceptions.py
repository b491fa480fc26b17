"""Errors of the testbed service, its API's experiments and the commands that talk to it."""

from __future__ import annotations

from controller.exceptions import TestbedError
from innet.exceptions import InnetError, InputError


class ServiceError(InnetError):
    """The service cannot start or serve (its API port is taken, the testbed failed to come
    up); the message says what to do."""


class ExperimentBusy(InputError):
    """Another experiment is running (the API answers 409)."""


class ExperimentNeedsMininet(TestbedError):
    """An experiment asked of a testbed without Mininet hosts (the API answers 503)."""


class NotRunning(InnetError):
    """No service answers where the run directory says one runs (exit status 1)."""


class RequestRefused(InputError):
    """The service refused a request as bad input (an HTTP 4xx); the message is its reason."""


class ServiceFailure(InnetError):
    """The service could not carry out a correct request (an HTTP 5xx)."""


class LimitError(InputError, ValueError):
    """A value outside what innet accepts (not finite, out of range, not a number); the
    message names the value, the range and the unit (controller/service/limits.py)."""


class ServiceRefused(InputError):
    """The service, started in the background, exited refusing its input (exit status 2): what
    only it could check, such as a cluster without the machines `--placement` names."""
