"""Reading a case file's values with errors that say where: the file, the line, the step.

A `Where` is a place in the case file (`innet.yaml:57`, `step 12 (send)`); its `fail` builds
the `CaseError` to raise, and its checks (`keys`, `integer`, `text`, ...) raise one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from p4diff.exceptions import CaseError
from p4diff.yamlfile import Mapping, Sequence, line_of


@dataclass(frozen=True)
class Where:
    """A place in a case file, for messages: the file, a line and what is being read."""

    path: Path
    line: int | None
    label: str  # "step 12 (send)", "writes[2]", "frames.contribution"

    def at(self, value: object, label: str | None = None) -> Where:
        """The same place, at `value`'s own line if it has one, under a longer label."""
        return replace(
            self,
            line=line_of(value, self.line),
            label=f"{self.label}: {label}" if label else self.label,
        )

    def fail(self, message: str) -> CaseError:
        return CaseError(self.path, self.line, f"{self.label}: {message}")

    # --- checks ----------------------------------------------------------------------------

    def mapping(self, value: object, what: str) -> Mapping:
        if not isinstance(value, Mapping):
            raise self.fail(f"{what} must be a mapping, got {_shown(value)}")
        return value

    def sequence(self, value: object, what: str) -> Sequence:
        if not isinstance(value, Sequence):
            raise self.fail(f"{what} must be a list, got {_shown(value)}")
        return value

    def keys(
        self, value: Mapping, what: str, required: Iterable[str] = (), optional: Iterable[str] = ()
    ) -> None:
        """Every required key present, no key outside required and optional."""
        required, optional = tuple(required), tuple(optional)
        unknown = [k for k in value if k not in required and k not in optional]
        if unknown:
            known = ", ".join((*required, *optional))
            raise self.fail(f"{what} has an unknown key {unknown[0]!r} (known: {known})")
        missing = [k for k in required if k not in value]
        if missing:
            raise self.fail(f"{what} needs the key {missing[0]!r}")

    def one_of(self, value: Mapping, what: str, choices: Iterable[str]) -> str:
        """The one key of `choices` that `value` has (exactly one must be there)."""
        choices = tuple(choices)
        present = [k for k in choices if k in value]
        if len(present) != 1:
            given = " and ".join(present) if present else "none"
            raise self.fail(f"{what} takes exactly one of {', '.join(choices)} (given: {given})")
        return present[0]

    def integer(self, value: object, what: str, low: int = 0, high: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"{what} must be a whole number, got {_shown(value)}")
        if value < low or (high is not None and value > high):
            span = f"{low}..{high}" if high is not None else f"at least {low}"
            raise self.fail(f"{what} {value} is out of range ({span})")
        return value

    def number(self, value: object, what: str, low: float = 0.0) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= low:
            raise self.fail(f"{what} must be a number above {low:g}, got {_shown(value)}")
        return float(value)

    def text(self, value: object, what: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"{what} must be a non-empty string, got {_shown(value)}")
        return value

    def flag(self, value: object, what: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(f"{what} must be true or false, got {_shown(value)}")
        return value


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)
