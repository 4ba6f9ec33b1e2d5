"""A fine-tuned model that did not learn is called collapsed, for classifiers and taggers
alike, and the warning points at the causes the parity measurement found
(bench/finetune_parity.py): a start on the unigram plateau, Adam without bias correction."""
import types

from finetune import run_finetune, tasks
from finetune.formats import TaggedExample, TextExample


def _texts(labels):
    return [TextExample(line=i + 1, texts=("一",), label=label) for i, label in enumerate(labels)]


def test_a_classifier_predicting_one_label_for_a_mixed_dev_set_has_collapsed():
    task = tasks.get_task("classification")
    examples = _texts(["pos"] * 53 + ["neg"] * 47)
    collapsed = task.collapse(examples, {"predicted": ["pos"] * 100})
    assert collapsed["collapsed"] and collapsed["majority_prediction"] == "pos"
    assert collapsed["gold_majority_share"] == 0.53 and collapsed["num_examples"] == 100
    # 97 of 100 one way is below the 98% line: a strong bias, not a collapse
    assert not task.collapse(examples, {"predicted": ["pos"] * 97 + ["neg"] * 3})["collapsed"]
    # a dev set that is (nearly) all one label cannot tell
    assert not task.collapse(_texts(["pos"] * 99 + ["neg"]),
                             {"predicted": ["pos"] * 100})["collapsed"]


def test_a_tagger_that_tags_nearly_everything_o_has_collapsed():
    task = tasks.get_task("ner")
    gold = [["B-LOC", "E-LOC", "O", "O", "S-PER"]] * 40   # 120 entity tokens
    examples = [TaggedExample(line=i, chars=list("北京的人王"), tags=tags)
                for i, tags in enumerate(gold)]
    all_o = task.collapse(examples, {"predicted": [["O"] * 5] * 40})
    assert all_o["collapsed"] and all_o["gold_entity_tokens"] == 120
    assert all_o["predicted_entity_tokens"] == 0
    two = [["S-PER", "O", "O", "O", "O"]] * 2 + [["O"] * 5] * 38   # 2 of 120: under 2%
    assert task.collapse(examples, {"predicted": two})["collapsed"]
    three = [["S-PER", "O", "O", "O", "O"]] * 3 + [["O"] * 5] * 37  # 3 of 120: 2.5%, kept
    assert not task.collapse(examples, {"predicted": three})["collapsed"]
    assert not task.collapse(examples, {"predicted": gold})["collapsed"]


def test_the_warning_names_the_measured_causes_in_order():
    task = tasks.get_task("classification")
    dev = types.SimpleNamespace(examples=_texts(["pos"] * 53 + ["neg"] * 47))
    logged = []
    result = run_finetune._collapse(task, dev, {"predicted": ["pos"] * 100}, logged.append)
    assert result["collapsed"] and len(logged) == 1
    message = logged[0]
    assert message.startswith("WARNING: collapsed: the best-on-dev model predicts 'pos' for "
                              "100.0% of dev (the most common gold label is 53.0%); its scores "
                              "are not a result.")
    plateau = message.index("python -m pretrain.training.learning_check")
    bias = message.index("--adam_bias_correction")
    rate = message.index("lower --learning_rate")
    assert plateau < bias < rate
    logged.clear()
    run_finetune._collapse(task, dev, {"predicted": ["pos"] * 50 + ["neg"] * 50}, logged.append)
    assert logged == []
