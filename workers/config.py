"""How every island process of one experiment is configured: a JSON file the runner writes and
each process reads (`IslandConfig`), holding the trainers' settings (`TrainConfig`).

    >>> config = IslandConfig(9, 2, 1, TrainConfig(inner_steps=5), 2432, 3, 1, PacketFormat())
    >>> IslandConfig.from_json(config.to_json()) == config
    True
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from innet.jsontypes import JSONObject
from innet.packetformat import PacketFormat, PacketFormatError
from workers.exceptions import TrainingConfigError


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """Model size, inner (AdamW) and outer (Nesterov SGD) optimisers, and the seed."""

    hidden: int = 32
    inner_steps: int = 20  # H
    batch_size: int = 32
    inner_lr: float = 3e-3
    weight_decay: float = 0.0
    outer_lr: float = 0.7
    outer_momentum: float = 0.9
    seed: int = 0
    overlap: bool = False  # the exchange overlaps the next round: outer update one round late
    model: str = "mlp"  # mlp (digits) or transformer (characters; hidden is its width)
    layers: int = 4  # transformer blocks
    context: int = 64  # characters per sequence

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise TrainingConfigError(f"{f.name} must be finite, got {value}")
        if self.model not in ("mlp", "transformer"):
            raise TrainingConfigError(f"model must be mlp or transformer, got {self.model!r}")
        for name in ("hidden", "inner_steps", "batch_size", "layers", "context"):
            if getattr(self, name) < 1:
                raise TrainingConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("inner_lr", "outer_lr"):
            if getattr(self, name) <= 0:
                raise TrainingConfigError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.weight_decay < 0:
            raise TrainingConfigError(f"weight_decay must be >= 0, got {self.weight_decay}")
        if not 0.0 <= self.outer_momentum < 1.0:
            raise TrainingConfigError(
                f"outer_momentum must be in [0, 1), got {self.outer_momentum}"
            )
        if self.seed < 0:
            raise TrainingConfigError(f"seed must be >= 0, got {self.seed}")


@dataclass(frozen=True, slots=True)
class IslandConfig:
    """What every island process of one experiment shares (written by the runner as JSON)."""

    islands: int
    hosts: int
    seed: int
    training: TrainConfig
    update_floats: int  # values on the wire: the model's parameters, zero-padded to this
    bound_exponent: int  # sends |x - theta0| <= 2**bound_exponent (clipped, counted)
    job: int
    packet_format: PacketFormat  # the switches': what the leaders send and read (JSON: lanes)

    @classmethod
    def read(cls, path: Path) -> IslandConfig:
        return cls.from_json(json.loads(Path(path).read_text()))

    def write(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=1))

    def to_json(self) -> JSONObject:
        nested = ("training", "packet_format")
        out: JSONObject = {
            f.name: getattr(self, f.name) for f in fields(self) if f.name not in nested
        }
        out["training"] = {f.name: getattr(self.training, f.name) for f in fields(self.training)}
        out["lanes"] = self.packet_format.lanes
        return out

    @classmethod
    def from_json(cls, data: Any) -> IslandConfig:
        """The configuration the runner wrote; TrainingConfigError if it is not one."""
        try:
            flat = {k: v for k, v in data.items() if k != "lanes"}
            training, packet_format = TrainConfig(**data["training"]), PacketFormat(data["lanes"])
            return cls(**{**flat, "training": training, "packet_format": packet_format})
        except (TypeError, KeyError, AttributeError, PacketFormatError) as err:
            raise TrainingConfigError(f"not an island configuration: {err}") from None
