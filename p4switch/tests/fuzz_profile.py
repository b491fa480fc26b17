"""How many examples the property-based tests run: a bounded, derandomized number in CI, and
twenty times as many, new ones each run, when P4SWITCH_FUZZ=long (`make fuzz` sets it)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

LONG = os.environ.get("P4SWITCH_FUZZ") == "long"


def fuzz_settings(examples: int, *, slow: bool = True) -> settings:
    """`examples` in CI, twenty times as many when P4SWITCH_FUZZ=long. `slow`: examples that build
    pipelines and switches (no Hypothesis health check for their time, size or fixtures)."""
    checks = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]
    return settings(
        max_examples=examples * (20 if LONG else 1),
        deadline=None,
        derandomize=not LONG,
        database=None,
        suppress_health_check=checks if slow else [],
    )
