"""Where things are in an innet checkout: the data-plane program, scenarios, results."""

from __future__ import annotations

from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
INNET_P4 = CHECKOUT / "p4src" / "innet.p4"  # the data plane every edge runs
SCENARIOS = CHECKOUT / "scenarios"
DEFAULT_SCENARIO = SCENARIOS / "nine-cities.yaml"
RESULTS = CHECKOUT / "results"
