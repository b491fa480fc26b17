"""What one target did in each step of a case, and its JSON file (`--record`, `--expect`).

    {"format": "p4diff recording 1", "case": "innet.yaml", "target": "p4switch",
     "notes": ["..."],
     "steps": [{"step": "step 3", "what": "send on port 1: ...",
                "emitted": {"3": ["02000a0001fe...", ...]}},
               {"step": "step 9", "what": "read counter InnetIngress.stats",
                "emitted": {}, "counters": {"InnetIngress.stats": [[0, 2, 372], ...]}},
               {"step": "setup 1", "what": "...", "emitted": {}, "outcome": "applied"}]}

Frames are hex, per port in the order the port emitted them (port "cpu": packet-ins, their
metadata under "packet_in_metadata"). `stray` lists frames that entered the switch from
something other than the harness (none, unless the namespace is polluted). `notes` say what a
human changed by hand and why; comparisons ignore them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from innet.jsontypes import JSONObject, JSONValue
from p4diff.exceptions import RecordingError

FORMAT = "p4diff recording 1"
CPU = "cpu"  # the port key of packet-ins

Frames = Mapping[str, tuple[bytes, ...]]  # port ("3", "cpu") -> frames in order
Cells = tuple[tuple[int, int, int], ...]  # (index, packets, bytes) of every cell


@dataclass(frozen=True)
class StepRecord:
    label: str  # "step 12"
    what: str
    emitted: Frames = field(default_factory=dict)
    stray: Frames = field(default_factory=dict)
    outcome: str | None = None  # a write: "applied" or "refused"
    counters: Mapping[str, Cells] = field(default_factory=dict)
    packet_in_metadata: tuple[str, ...] = ()  # "name=value ..." of each packet-in

    def to_json(self) -> JSONObject:
        out: JSONObject = {
            "step": self.label,
            "what": self.what,
            "emitted": _frames_json(self.emitted),
        }
        if self.stray:
            out["stray"] = _frames_json(self.stray)
        if self.outcome is not None:
            out["outcome"] = self.outcome
        if self.counters:
            out["counters"] = {
                name: [list(cell) for cell in cells] for name, cells in self.counters.items()
            }
        if self.packet_in_metadata:
            out["packet_in_metadata"] = list(self.packet_in_metadata)
        return out


@dataclass(frozen=True)
class Recording:
    target: str
    case: str
    steps: tuple[StepRecord, ...]
    notes: tuple[str, ...] = ()

    def to_json(self) -> str:
        doc: JSONObject = {"format": FORMAT, "case": self.case, "target": self.target}
        if self.notes:
            doc["notes"] = list(self.notes)
        doc["steps"] = [step.to_json() for step in self.steps]
        return json.dumps(doc, indent=1) + "\n"

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json(), encoding="utf-8")


def _frames_json(frames: Frames) -> JSONObject:
    return {port: [frame.hex() for frame in frames[port]] for port in sorted(frames, key=port_key)}


def port_key(port: str) -> tuple[int, str]:
    """Ports in numeric order, the CPU last."""
    return (int(port), "") if port.isdigit() else (1 << 16, port)


# --- reading -----------------------------------------------------------------------------------


def load_recording(path: Path) -> Recording:
    """A recording file; RecordingError saying what is wrong with it."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise RecordingError(f"{path}: cannot read the recording: {err.strerror}") from None
    except ValueError as err:
        raise RecordingError(f"{path}: not JSON: {err}") from None
    try:
        return _recording(doc)
    except (KeyError, TypeError, ValueError) as err:
        raise RecordingError(f"{path}: not a p4diff recording ({FORMAT}): {err!r}") from None


def _recording(doc: Any) -> Recording:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"format is not {FORMAT!r}")
    return Recording(
        target=str(doc["target"]),
        case=str(doc["case"]),
        steps=tuple(_step(step) for step in doc["steps"]),
        notes=tuple(str(note) for note in doc.get("notes", [])),
    )


def _step(doc: dict[str, Any]) -> StepRecord:
    known = {"step", "what", "emitted", "stray", "outcome", "counters", "packet_in_metadata"}
    unknown = sorted(set(doc) - known)
    if unknown:
        raise ValueError(f"step {doc.get('step')}: unknown key {unknown[0]!r}")
    return StepRecord(
        label=str(doc["step"]),
        what=str(doc["what"]),
        emitted=_frames(doc["emitted"]),
        stray=_frames(doc.get("stray", {})),
        outcome=None if doc.get("outcome") is None else str(doc["outcome"]),
        counters={
            str(name): tuple((int(i), int(p), int(b)) for i, p, b in cells)
            for name, cells in doc.get("counters", {}).items()
        },
        packet_in_metadata=tuple(str(m) for m in doc.get("packet_in_metadata", [])),
    )


def _frames(doc: Mapping[str, JSONValue]) -> dict[str, tuple[bytes, ...]]:
    out = {}
    for port, frames in doc.items():
        if not (port.isdigit() or port == CPU) or not isinstance(frames, list):
            raise ValueError(f"emitted: {port!r} is not a port with a list of frames")
        out[port] = tuple(bytes.fromhex(str(frame)) for frame in frames)
    return out
