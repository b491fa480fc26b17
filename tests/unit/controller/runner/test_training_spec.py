"""The scenario's `training` and `compute` sections: what they accept, and bad input refused at
its line before anything starts (controller/runner/training_spec.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.runner.emulation import resolve
from controller.runner.exceptions import ScenarioError
from controller.runner.scenario import load_scenario, parse_scenario
from workers import textlm

BAD = [
    ("step-zero", "compute:\n  step_time: 0s\n", "compute.step_time", 3, ["positive"]),
    ("step-negative", "compute:\n  step_time: -450ms\n", "compute.step_time", 3, ["positive"]),
    ("step-and-flops", "compute:\n  step_time: 1s\n  mfu: 0.5\n", "compute.mfu", 4, ["not both"]),
    ("neither", "compute:\n  mfu: 0.5\n", "compute", 3, ["give step_time"]),
    (
        "mfu-above-one",
        "compute:\n  tokens_per_step: 4M\n  mfu: 1.5\n",
        "compute.mfu",
        4,
        ["(0, 1]"],
    ),
    (
        "accelerator",
        "compute:\n  tokens_per_step: 4M\n  accelerator: tpu9\n",
        "compute.accelerator",
        4,
        ["unknown accelerator 'tpu9'", "a100, h100"],
    ),
    (
        "tokens",
        "compute:\n  tokens_per_step: lots\n",
        "compute.tokens_per_step",
        3,
        ["positive count"],
    ),
    (
        "accuracy-above-one",
        "training:\n  target_accuracy: 1.5\n",
        "training.target_accuracy",
        3,
        ["(0, 1]"],
    ),
    (
        "accuracy-zero",
        "training:\n  target_accuracy: 0\n",
        "training.target_accuracy",
        3,
        ["above 0"],
    ),
    ("loss-negative", "training:\n  target_loss: -1\n", "training.target_loss", 3, ["above 0"]),
    (
        "overlap-not-bool",
        "training:\n  overlap: sometimes\n",
        "training.overlap",
        3,
        ["true or false"],
    ),
    ("model", "training:\n  model: rnn\n", "training.model", 3, ["unknown model 'rnn'"]),
    (
        "width",
        "training:\n  model: transformer\n  hidden: 100\n",
        "training.hidden",
        4,
        ["multiple of 32"],
    ),
    ("one-dc", "one_dc: maybe\n", "one_dc", 2, ["true or false"]),
]


@pytest.mark.parametrize(
    ("text", "key", "line", "words"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_input_names_the_line(
    tmp_path: Path, text: str, key: str, line: int, words: list[str]
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: bad\n" + text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value).startswith(f"{path}:{line}: {key}: "), str(err.value)
    for word in words:
        assert word in str(err.value)


def test_a_corpus_that_cannot_be_found_is_refused_at_the_model_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(textlm, "CORPUS_MODULES", ("no_such_module_here.py",))
    path = tmp_path / "s.yaml"
    path.write_text("name: bad\ntraining:\n  rounds: 2\n  model: transformer\n  hidden: 64\n")
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value).startswith(f"{path}:4: training.model: no corpus")
    assert "no_such_module_here.py" in str(err.value)


def test_compute_from_flops_and_the_round_trip() -> None:
    text = (
        "name: c\ncompute:\n  tokens_per_step: 4M\n  accelerators: 256\n  mfu: 0.5\n"
        "training:\n  overlap: true\n  target_accuracy: 0.9\n"
    )
    sc = parse_scenario(text)
    assert sc.one_dc  # the reference comes with compute unless switched off
    assert sc.training.overlap and sc.training.target_accuracy == 0.9
    assert sc.compute is not None and sc.compute.tokens_per_step == 4e6
    step = sc.compute.resolve(250e6)  # params: the update's values
    assert step.step_time_s == pytest.approx(6 * 250e6 * 4e6 / (256 * 989e12 * 0.5))
    import yaml

    again = parse_scenario(
        "name: c\n" + yaml.safe_dump({k: v for k, v in sc.to_dict().items() if k != "name"})
    )
    assert again == sc


def test_a_step_time_and_no_reference_when_asked() -> None:
    sc = parse_scenario("name: c\ncompute: {step_time: 450ms}\none_dc: false\n")
    assert sc.compute is not None and sc.compute.resolve(1.0).step_time_s == pytest.approx(0.45)
    assert not sc.one_dc
    assert not parse_scenario("name: c\n").one_dc  # no compute, no reference by default


def test_the_transformer_scenario_resolves_to_its_parameter_count() -> None:
    sc = parse_scenario("name: t\ntraining:\n  model: transformer\n  hidden: 160\n")
    em = resolve(sc)
    assert em.model_params == textlm.transformer_params(160, 4, 64) >= 1_000_000
    assert em.island.training.model == "transformer"
