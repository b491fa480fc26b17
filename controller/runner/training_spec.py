"""A scenario's `training` and `compute` sections: what trains, and what compute it stands for.

    training:
      rounds: 8                 # outer rounds per schedule
      inner_steps: 20           # H: inner (AdamW) steps per round
      model: mlp                # mlp (digits) or transformer (characters of Python's own source)
      hidden: 32                # the MLP's hidden units, or the transformer's width (32..1024)
      layers: 4                 # transformer blocks (transformer only)
      context: 64               # characters per sequence (transformer only)
      batch_size: 32
      inner_lr: 0.003
      outer_lr: 0.7
      outer_momentum: 0.9
      overlap: false            # true: the exchange overlaps the next round's inner steps and
                                # the outer update lands one round late (streaming DiLoCo)
      target_accuracy: 0.9      # in (0, 1]: report the full-scale time the test accuracy first
                                # reaches it (or that it never did)
      target_loss: null         # > 0: the same for the test loss falling to it

    compute:                    # the emulated system's compute at full scale; either
      step_time: 450ms          # the time of one inner step, or
      params: update            # the model's parameters (default: the update's values)
      tokens_per_step: 4M       # tokens an island processes per inner step
      accelerator: h100         # a100 or h100 (controller/planner/compute.py)
      accelerators: 256         # per island
      mfu: 0.4                  # the share of peak the model uses

Or the training is the user's own script (controller/runner/script.py), and no other key:

    training:
      script: train.py          # beside the scenario, or an absolute path
      args: [--rounds, "4"]     # its command line
      timeout: 1800s            # each play's whole run, at most
      target: {metric: val_loss, below: 3.3}   # when a play counts as trained (or above:)

Without `compute` a run reports round times alone, as before; with it, every row of the summary
also gives compute utilisation and the full-scale wall-clock (controller/planner/compute.py).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from controller.planner.compute import ACCELERATORS, Compute
from innet.jsontypes import JSONObject
from innet.units import parse_duration
from topo.yamlfile import YamlReader

MODELS = ("mlp", "transformer")
MAX_WIDTH = 1024  # a transformer wider than this does not train on two cores
_COUNT = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*([kMBT]?)\s*")
_COUNT_FACTORS = {"": 1.0, "k": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


@dataclass(frozen=True)
class Training:
    """The training run of each schedule: DiLoCo-style inner steps between outer rounds."""

    rounds: int = 12
    inner_steps: int = 20
    hidden: int = 32
    batch_size: int = 32
    inner_lr: float = 0.003
    outer_lr: float = 0.7
    outer_momentum: float = 0.9
    overlap: bool = False
    target_accuracy: float | None = None
    target_loss: float | None = None
    model: str = "mlp"
    layers: int = 4
    context: int = 64


TRAINING_FIELDS = dataclasses.fields(Training)


@dataclass(frozen=True)
class ComputeSpec:
    """The `compute` section as written: a step time, or a dense model's FLOPs."""

    step_time_s: float | None = None
    params: float | None = None  # None: the full-scale update's values
    tokens_per_step: float | None = None
    accelerator: str = "h100"
    accelerators: int = 1
    mfu: float = 0.4

    def resolve(self, update_values: float) -> Compute:
        """The step time; `update_values` stands for the model when `params` is not given."""
        if self.step_time_s is not None:
            return Compute(self.step_time_s, "given")
        assert self.tokens_per_step is not None  # parse_compute asks for one or the other
        params = update_values if self.params is None else self.params
        return Compute.from_flops(
            params, self.tokens_per_step, self.accelerator, self.accelerators, self.mfu
        )

    def to_dict(self) -> JSONObject:
        if self.step_time_s is not None:
            return {"step_time": f"{self.step_time_s:.15g}s"}
        return {
            "params": "update" if self.params is None else f"{self.params:.15g}",
            "tokens_per_step": f"{self.tokens_per_step:.15g}",
            "accelerator": self.accelerator,
            "accelerators": self.accelerators,
            "mfu": self.mfu,
        }


@dataclass(frozen=True)
class MetricTarget:
    """A value of a metric the script logs (innet.torch.log) that counts as trained: at or
    below `below`, or at or above `above` (one of the two).

    >>> t = MetricTarget("val_loss", below=3.3)
    >>> t.reached({"val_loss": 3.29}), t.reached({"val_loss": 3.4}), t.reached({"loss": 1.0})
    (True, False, False)
    >>> t.text
    'val_loss <= 3.3'
    """

    metric: str
    below: float | None = None
    above: float | None = None

    def reached(self, line: Mapping[str, Any]) -> bool:
        value = line.get(self.metric)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.below is not None:
            return value <= self.below
        return self.above is not None and value >= self.above

    @property
    def text(self) -> str:
        if self.below is not None:
            return f"{self.metric} <= {self.below:g}"
        return f"{self.metric} >= {self.above:g}"

    def to_dict(self) -> JSONObject:
        side = {"below": self.below} if self.below is not None else {"above": self.above}
        return {"metric": self.metric, **side}


@dataclass(frozen=True)
class ScriptSpec:
    """A training script to run as the islands' ranks (controller/runner/script.py)."""

    path: Path  # absolute
    args: tuple[str, ...] = ()
    timeout_s: float = 1800.0
    target: MetricTarget | None = None  # when a play counts as trained

    def to_dict(self) -> JSONObject:
        return {
            "script": str(self.path),
            "args": list(self.args),
            "timeout": f"{self.timeout_s:.15g}s",
            "target": None if self.target is None else self.target.to_dict(),
        }


SCRIPT_KEYS = ("script", "args", "timeout", "target")


def names_script(node: yaml.Node | None) -> bool:
    """Whether a `training` section is a script's (it has the key `script`)."""
    if not isinstance(node, yaml.MappingNode):
        return False
    return any(isinstance(k, yaml.ScalarNode) and k.value == "script" for k, _ in node.value)


def parse_script(doc: YamlReader, node: yaml.Node, beside: Path) -> ScriptSpec:
    """`training` naming a script: a Python file that exists (relative to the scenario's
    folder `beside`), its arguments as texts, a positive timeout."""
    items = doc.options(node, "training", SCRIPT_KEYS)
    if "script" not in items:
        raise doc.fail(node, "training.script", "missing: name the script to run")
    given = doc.text(items["script"], "training.script")
    path = Path(given) if Path(given).is_absolute() else beside / given
    if not path.is_file():
        raise doc.fail(items["script"], "training.script", f"{given}: no such file ({path})")
    args: list[str] = []
    if "args" in items:
        for i, arg in enumerate(doc.sequence(items["args"], "training.args")):
            value = doc.scalar(arg)
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise doc.fail(arg, f"training.args[{i}]", "an argument is a text or a number")
            args.append(str(value))
    timeout = doc.quantity(items.get("timeout"), "training.timeout", parse_duration, "1800s")
    if not timeout > 0:
        raise doc.fail(items.get("timeout"), "training.timeout", "must be positive")
    target = None if "target" not in items else _target(doc, items["target"])
    return ScriptSpec(path.resolve(), tuple(args), timeout, target)


def _target(doc: YamlReader, node: yaml.Node) -> MetricTarget:
    """`target: {metric: NAME, below: X}` (or `above: X`)."""
    items = doc.options(node, "training.target", ("metric", "below", "above"))
    if "metric" not in items:
        raise doc.fail(node, "training.target.metric", "missing: name the metric the script logs")
    metric = doc.text(items["metric"], "training.target.metric")
    sides = [k for k in ("below", "above") if k in items]
    if len(sides) != 1:
        why = "give below (a loss) or above (an accuracy): one of the two"
        raise doc.fail(node, "training.target", why)
    value = doc.number(items[sides[0]], f"training.target.{sides[0]}", 0.0)
    return MetricTarget(metric, **{sides[0]: value})


def parse_training(doc: YamlReader, node: yaml.Node | None) -> Training:
    if node is None:
        return Training()
    known = tuple(f.name for f in TRAINING_FIELDS)
    items = doc.options(node, "training", known)
    default = Training()
    values: dict[str, Any] = {}
    for key in ("rounds", "inner_steps", "batch_size", "layers"):
        values[key] = doc.integer(items.get(key), f"training.{key}", getattr(default, key), low=1)
    values["hidden"] = doc.integer(
        items.get("hidden"), "training.hidden", default.hidden, low=1, high=MAX_WIDTH * 64
    )
    values["context"] = doc.integer(
        items.get("context"), "training.context", default.context, low=2, high=1024
    )
    for key in ("inner_lr", "outer_lr"):
        values[key] = doc.number(
            items.get(key), f"training.{key}", getattr(default, key), low=0.0, open_low=True
        )
    momentum = doc.number(
        items.get("outer_momentum"), "training.outer_momentum", default.outer_momentum, low=0.0
    )
    if momentum >= 1.0:
        raise doc.fail(items["outer_momentum"], "training.outer_momentum", "must be below 1")
    values["overlap"] = doc.boolean(items.get("overlap"), "training.overlap")
    if "target_accuracy" in items:
        values["target_accuracy"] = _share(
            doc,
            items["target_accuracy"],
            "training.target_accuracy",
            0.0,
            "an accuracy is a share of the test set",
        )
    if "target_loss" in items:
        values["target_loss"] = doc.number(
            items["target_loss"], "training.target_loss", 0.0, low=0.0, open_low=True
        )
    if "model" in items:
        model = doc.text(items["model"], "training.model")
        if model not in MODELS:
            why = f"unknown model {model!r}; known: {', '.join(MODELS)}"
            raise doc.fail(items["model"], "training.model", why)
        values["model"] = model
        if model == "transformer":
            _transformer_checks(doc, items, values)
    return Training(**values, outer_momentum=momentum)


def _transformer_checks(
    doc: YamlReader, items: dict[str, yaml.Node], values: dict[str, Any]
) -> None:
    """A width the heads divide (32 per head), and a corpus this Python has."""
    width = values["hidden"]
    if width % 32 or width > MAX_WIDTH:
        why = f"{width}: a transformer's width is a multiple of 32 (a head each), <= {MAX_WIDTH}"
        raise doc.fail(items.get("hidden"), "training.hidden", why)
    from workers.textlm import CorpusError, load_corpus  # torch: only for the transformer

    try:
        load_corpus()
    except CorpusError as err:
        raise doc.fail(items["model"], "training.model", f"no corpus to train on: {err}") from None


def parse_compute(doc: YamlReader, node: yaml.Node | None) -> ComputeSpec | None:
    if node is None:
        return None
    keys = ("step_time", "params", "tokens_per_step", "accelerator", "accelerators", "mfu")
    items = doc.options(node, "compute", keys)
    if "step_time" in items:
        others = sorted(set(items) - {"step_time"})
        if others:
            why = f"give step_time or the FLOPs figures ({', '.join(others)}), not both"
            raise doc.fail(items[others[0]], f"compute.{others[0]}", why)
        step = doc.quantity(items["step_time"], "compute.step_time", parse_duration)
        return ComputeSpec(step_time_s=step)
    if "tokens_per_step" not in items:
        why = "give step_time (e.g. 450ms), or tokens_per_step with params, accelerator, mfu"
        raise doc.fail(node, "compute", why)
    spec: dict[str, Any] = {
        "tokens_per_step": _count(doc, items["tokens_per_step"], "compute.tokens_per_step")
    }
    if "params" in items and doc.scalar(items["params"]) != "update":
        spec["params"] = _count(doc, items["params"], "compute.params")
    if "accelerator" in items:
        name = doc.text(items["accelerator"], "compute.accelerator")
        if name not in ACCELERATORS:
            why = f"unknown accelerator {name!r}; known: {', '.join(sorted(ACCELERATORS))}"
            raise doc.fail(items["accelerator"], "compute.accelerator", why)
        spec["accelerator"] = name
    spec["accelerators"] = doc.integer(items.get("accelerators"), "compute.accelerators", 1, low=1)
    mfu = _share(doc, items.get("mfu"), "compute.mfu", 0.4, "MFU is a share of peak")
    return ComputeSpec(**spec, mfu=mfu)


def _share(doc: YamlReader, node: yaml.Node | None, key: str, default: float, what: str) -> float:
    """A number in (0, 1]."""
    value = doc.number(node, key, default, low=0.0, open_low=True)
    if value > 1.0:
        raise doc.fail(node, key, f"{value:g}: {what}, in (0, 1]")
    return value


def _count(doc: YamlReader, node: yaml.Node, key: str) -> float:
    """A positive count such as 4096, 4M, 1.5B or 4e6."""
    value = doc.scalar(node)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    match = _COUNT.fullmatch(str(value)) if isinstance(value, str) else None
    if match is None or float(match[1]) <= 0:
        raise doc.fail(
            node, key, f"must be a positive count such as 4096, 4M or 1.5B, got {value!r}"
        )
    return float(match[1]) * _COUNT_FACTORS[match[2]]
