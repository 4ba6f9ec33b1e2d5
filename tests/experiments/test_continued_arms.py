"""experiments/continued_arms.py: #66's arms as data (continuing_arms.json), read and checked,
and every arm's flags ones that run_pretraining takes at the row's recipe."""
import json

import pytest

from common.cli_options import UserError
from experiments import continued_arms
from pretrain import pretraining_options


def _value(text):
    try:
        return float(text)
    except ValueError:
        return text


def test_the_arms_are_today_s_recipe_and_seven_more_whose_flags_run_pretraining_takes():
    arms = continued_arms.read_arms()
    assert arms["baseline"] == "static15_poly" and arms["models"] == ["roberta"]
    assert list(arms["arms"]) == ["static15_poly", "tt15_poly", "tt30_poly", "tt30to15_poly",
                                  "static15_wsd", "tt15_wsd", "tt30_wsd", "tt30to15_wsd"]
    assert arms["decision_comparisons"] == {"chnsenticorp": "compare", "msra": "compare",
                                            "lcqmc": "compare_train40000"}
    for name, arm in arms["arms"].items():
        flags = dict(flag[2:].split("=", 1) for flag in arm["flags"])
        # a train-time arm names its rate; a static one has none (run_pretraining refuses it)
        assert ("mlm_probability" in flags) == (arm["data"] == "train_time"), name
        assert (flags.get("lr_scheduler_type") == "warmup_stable_decay") == name.endswith("_wsd")
        opts = pretraining_options.validate(pretraining_options.options_from(dict(
            {key: _value(value) for key, value in flags.items()}, output_dir="x",
            input_file="x", do_train=True, num_train_steps=1000, num_warmup_steps=100)))
        if name.endswith("_wsd"):
            assert (opts.num_decay_steps, opts.decay_type) == (200, "cosine")  # 20% cosine


def test_chosen_keeps_the_file_s_order_and_refuses_an_unknown_arm_or_model():
    assert continued_arms.chosen({"ARMS": "tt30_wsd,tt15_poly"}, "roberta") == [
        "tt15_poly", "tt30_wsd"]
    assert len(continued_arms.chosen({"ARMS": ""}, "roberta")) == 8
    with pytest.raises(UserError, match=r"^ARMS: unknown arm 'tt45_poly': choose among "
                                        r"static15_poly, tt15_poly, "):
        continued_arms.chosen({"ARMS": "tt15_poly,tt45_poly"}, "roberta")
    with pytest.raises(UserError, match=r"^arms: defined for MODEL roberta .*not albert"):
        continued_arms.chosen({"ARMS": ""}, "albert")


@pytest.mark.parametrize("change,message", [
    (lambda data: data["arms"]["tt15_poly"].update(data="dynamic"),
     "arm tt15_poly: data must be static or train_time"),
    (lambda data: data["arms"]["tt15_poly"].pop("help"), "arm tt15_poly: missing field(s) help"),
    (lambda data: data.update(baseline="tt15_poly"), "baseline 'tt15_poly' must be an arm "
                                                      "without flags"),
])
def test_a_bad_arms_file_is_refused_naming_the_arm(tmp_path, monkeypatch, change, message):
    with open(continued_arms.ARMS_FILE, encoding="utf-8") as f:
        data = json.load(f)
    change(data)
    path = tmp_path / "continuing_arms.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(continued_arms, "ARMS_FILE", str(path))
    with pytest.raises(UserError) as refused:
        continued_arms.read_arms()
    assert str(refused.value).startswith(f"{path}: {message}")
