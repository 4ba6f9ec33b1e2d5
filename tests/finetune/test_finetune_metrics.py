"""Task metrics (finetune/metrics.py) against hand-worked and published values.

Classification: confusion matrices worked by hand, and scikit-learn's
documented f1_score example. NER: seqeval's README and test values (default
mode = conlleval.pl) and sequences whose chunks follow conlleval's rules,
worked by hand.

Tolerances: the metrics are Python float64 arithmetic on counts, so pytest.approx's
default (relative 1e-6) is ten orders above their rounding and far below 1/N.
"""
import random

import pytest

from finetune.metrics import classification_metrics, entity_counts, ner_metrics
from finetune.tag_schemes import TagSchemeError, convert_tags, spans_to_tags, tags_to_spans


def scores(precision, recall, f1, support):
    return {"precision": pytest.approx(precision), "recall": pytest.approx(recall),
            "f1": pytest.approx(f1), "support": support}


# ---------------------------------------------------------------- classification

def test_two_labels_pos_neg():
    gold = ["pos", "pos", "pos", "neg", "neg"]
    predicted = ["pos", "neg", "pos", "neg", "pos"]
    result = classification_metrics(gold, predicted, ["neg", "pos"])
    # pos: tp 2, predicted 3, gold 3; neg: tp 1, predicted 2, gold 2.
    assert result == {
        "accuracy": pytest.approx(3 / 5),
        "macro_f1": pytest.approx((2 / 3 + 1 / 2) / 2),
        "num_examples": 5,
        "per_label": {"neg": scores(1 / 2, 1 / 2, 1 / 2, 2), "pos": scores(2 / 3, 2 / 3, 2 / 3, 3)},
    }
    assert list(result["per_label"]) == ["neg", "pos"]  # the given (id) order


def test_three_labels_confusion_matrix():
    gold = ["a", "a", "a", "a", "b", "b", "b", "c", "c", "c"]
    predicted = ["a", "a", "b", "c", "b", "b", "a", "c", "c", "b"]
    # Confusion matrix (rows gold, columns predicted a b c):
    #   a: 2 1 1    b: 1 2 0    c: 0 1 2
    result = classification_metrics(gold, predicted, ["a", "b", "c"])
    assert result["accuracy"] == pytest.approx(6 / 10)
    assert result["per_label"] == {
        "a": scores(2 / 3, 2 / 4, 4 / 7, 4),
        "b": scores(2 / 4, 2 / 3, 4 / 7, 3),
        "c": scores(2 / 3, 2 / 3, 2 / 3, 3),
    }
    assert result["macro_f1"] == pytest.approx(38 / 63)


def test_scikit_learn_documented_example():
    # sklearn.metrics.f1_score docs: y_true=[0,1,2,0,1,2], y_pred=[0,2,1,0,0,1]
    # -> average=None [0.8, 0, 0], average="macro" 0.26666...
    result = classification_metrics(["0", "1", "2", "0", "1", "2"],
                                    ["0", "2", "1", "0", "0", "1"], ["0", "1", "2"])
    assert [result["per_label"][label]["f1"] for label in "012"] == pytest.approx([0.8, 0.0, 0.0])
    assert result["macro_f1"] == pytest.approx(0.26666666666666666)
    assert result["per_label"]["0"]["precision"] == pytest.approx(2 / 3)
    assert result["accuracy"] == pytest.approx(1 / 3)


def test_label_never_predicted_and_label_never_seen():
    result = classification_metrics(["x", "y", "z", "z"], ["x", "y", "y", "y"],
                                    ["x", "y", "z", "w"])
    assert result["per_label"] == {
        "x": scores(1.0, 1.0, 1.0, 1),
        "y": scores(1 / 3, 1.0, 0.5, 1),
        "z": scores(0.0, 0.0, 0.0, 2),    # precision 0/0 -> 0.0
        "w": scores(0.0, 0.0, 0.0, 0),    # in the label set, never seen: not in the mean
    }
    assert result["macro_f1"] == pytest.approx((1.0 + 0.5 + 0.0) / 3)
    assert result["accuracy"] == pytest.approx(0.5)


def test_label_only_predicted_is_reported_and_averaged():
    result = classification_metrics(["a", "a", "b"], ["a", "c", "b"], ["a", "b"])
    assert list(result["per_label"]) == ["a", "b", "c"]
    assert result["per_label"]["c"] == scores(0.0, 0.0, 0.0, 0)   # recall 0/0 -> 0.0
    assert result["per_label"]["a"] == scores(1.0, 0.5, 2 / 3, 2)
    assert result["macro_f1"] == pytest.approx((2 / 3 + 1.0 + 0.0) / 3)


def test_numeric_string_labels_100_to_116():
    labels = [str(code) for code in range(100, 117)]
    gold = list(labels)
    predicted = labels[:15] + ["116", "100"]   # 115 -> 116, 116 -> 100
    result = classification_metrics(gold, predicted, labels)
    assert list(result["per_label"]) == labels
    assert result["per_label"]["100"] == scores(0.5, 1.0, 2 / 3, 1)
    assert result["per_label"]["115"] == scores(0.0, 0.0, 0.0, 1)
    assert result["per_label"]["116"] == scores(0.0, 0.0, 0.0, 1)
    assert result["per_label"]["107"] == scores(1.0, 1.0, 1.0, 1)
    assert result["accuracy"] == pytest.approx(15 / 17)
    assert result["macro_f1"] == pytest.approx((14 + 2 / 3) / 17)
    assert result["num_examples"] == 17


def test_perfect_and_all_wrong():
    perfect = classification_metrics(["1", "0", "1"], ["1", "0", "1"], ["0", "1"])
    assert perfect["accuracy"] == 1.0 and perfect["macro_f1"] == 1.0
    wrong = classification_metrics(["1", "0"], ["0", "1"], ["0", "1"])
    assert wrong["accuracy"] == 0.0 and wrong["macro_f1"] == 0.0
    for value in (wrong["accuracy"], wrong["macro_f1"], perfect["per_label"]["0"]["f1"]):
        assert type(value) is float


def test_classification_errors():
    with pytest.raises(ValueError):
        classification_metrics([], [], ["a"])
    with pytest.raises(ValueError, match="3 gold labels but 2 predicted"):
        classification_metrics(["a", "b", "a"], ["a", "b"], ["a", "b"])


# ---------------------------------------------------------------- NER

# seqeval README: f1_score 0.50; MISC 0.00 0.00 0.00 support 1, PER 1.00 support 1.
README_GOLD = [["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
README_PRED = [["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
README_EXPECTED = {
    "precision": pytest.approx(0.5), "recall": pytest.approx(0.5), "f1": pytest.approx(0.5),
    "num_gold_entities": 2, "num_predicted_entities": 2, "num_correct_entities": 1,
    "per_type": {"MISC": scores(0.0, 0.0, 0.0, 1), "PER": scores(1.0, 1.0, 1.0, 1)},
}


def to_scheme(sentences, scheme):
    """BIO sentences rewritten in another scheme (same entities)."""
    return [convert_tags(tags, "BIO", scheme) for tags in sentences]


def test_seqeval_readme_example_iob2():
    assert ner_metrics(README_GOLD, README_PRED, "IOB2") == README_EXPECTED
    assert entity_counts(README_GOLD, README_PRED, "BIO") == [(1, 1, 0), (1, 1, 1)]


def test_seqeval_readme_example_bioes_and_bmes():
    gold = [["O", "O", "O", "B-MISC", "I-MISC", "E-MISC", "O"], ["B-PER", "E-PER", "O"]]
    pred = [["O", "O", "B-MISC", "I-MISC", "I-MISC", "E-MISC", "O"], ["B-PER", "E-PER", "O"]]
    assert to_scheme(README_GOLD, "BIOES") == gold and to_scheme(README_PRED, "BIOES") == pred
    assert ner_metrics(gold, pred, "BIOES") == README_EXPECTED
    bmes_gold = [[tag.replace("I-", "M-") for tag in tags] for tags in gold]
    bmes_pred = [[tag.replace("I-", "M-") for tag in tags] for tags in pred]
    assert bmes_gold[0][4] == "M-MISC"
    assert ner_metrics(bmes_gold, bmes_pred, "BMES") == README_EXPECTED


def test_seqeval_per_type_report_with_a_type_only_predicted():
    # seqeval tests/test_v1.py classification_report(output_dict=True):
    # A 1.00/0.50/0.667 (2), B 1.00/1.00/1.00 (1), C 0/0/0 (0); micro 0.667.
    result = ner_metrics([["B-A", "B-B", "O", "B-A"]], [["O", "B-B", "B-C", "B-A"]], "BIO")
    assert result["per_type"] == {"A": scores(1.0, 0.5, 2 / 3, 2), "B": scores(1.0, 1.0, 1.0, 1),
                                  "C": scores(0.0, 0.0, 0.0, 0)}
    assert list(result["per_type"]) == ["A", "B", "C"]
    assert (result["precision"], result["recall"], result["f1"]) == pytest.approx((2 / 3,) * 3)
    as_bioes = ner_metrics([["S-A", "S-B", "O", "S-A"]], [["O", "S-B", "S-C", "S-A"]], "BIOES")
    assert as_bioes == result


def test_i_after_o_is_an_entity_as_in_conlleval():
    # seqeval test_conll_f1score: B-ORG I-ORG vs I-ORG I-ORG -> F1 1 in default mode.
    result = ner_metrics([["B-ORG", "I-ORG"]], [["I-ORG", "I-ORG"]], "BIO")
    assert result["f1"] == 1.0 and result["num_correct_entities"] == 1


def test_ill_formed_bio_predictions():
    gold = [["B-PER", "I-PER", "I-PER", "O", "B-LOC", "I-LOC", "I-LOC"],
            ["O", "B-ORG", "I-ORG", "B-ORG"]]
    pred = [["B-PER", "I-PER", "I-PER", "O", "B-LOC", "I-ORG", "I-ORG"],   # type switch
            ["I-LOC", "I-LOC", "B-LOC", "I-ORG"]]                          # I after O, switch
    # gold: PER(0,3) LOC(4,7) | ORG(1,3) ORG(3,4)
    # pred: PER(0,3) LOC(4,5) ORG(5,7) | LOC(0,2) LOC(2,3) ORG(3,4)
    # (conlleval.pl: 4 phrases; found: 6; correct: 2; precision 33.33%, recall 50.00%, FB1 40.00)
    result = ner_metrics(gold, pred, "BIO")
    assert (result["num_gold_entities"], result["num_predicted_entities"],
            result["num_correct_entities"]) == (4, 6, 2)
    assert (result["precision"], result["recall"], result["f1"]) == pytest.approx(
        (1 / 3, 1 / 2, 0.4))
    assert result["per_type"] == {"LOC": scores(0.0, 0.0, 0.0, 1),
                                  "ORG": scores(0.5, 0.5, 0.5, 2),
                                  "PER": scores(1.0, 1.0, 1.0, 1)}
    assert entity_counts(gold, pred, "BIO") == [(2, 3, 1), (2, 3, 1)]


def test_ill_formed_bioes_and_bmes_predictions():
    gold = [["B-ORG", "I-ORG", "E-ORG", "O", "S-LOC", "B-PER", "E-PER"]]
    pred = [["O", "I-ORG", "E-ORG", "O", "E-LOC", "B-PER", "E-LOC"]]
    # gold: ORG(0,3) LOC(4,5) PER(5,7); pred: ORG(1,3) (I after O), LOC(4,5) (E after O),
    # PER(5,6) LOC(6,7) (type switch).
    expected = {"precision": pytest.approx(1 / 4), "recall": pytest.approx(1 / 3),
                "f1": pytest.approx(2 / 7), "num_gold_entities": 3,
                "num_predicted_entities": 4, "num_correct_entities": 1,
                "per_type": {"LOC": scores(0.5, 1.0, 2 / 3, 1), "ORG": scores(0.0, 0.0, 0.0, 1),
                             "PER": scores(0.0, 0.0, 0.0, 1)}}
    assert ner_metrics(gold, pred, "BIOES") == expected
    as_bmes = [[[tag.replace("I-", "M-") for tag in tags] for tags in sentences]
               for sentences in (gold, pred)]
    assert ner_metrics(*as_bmes, "BMES") == expected


def test_entities_do_not_cross_sentences():
    gold = [["O", "B-PER"], ["I-PER", "O"]]
    pred = [["O", "B-PER"], ["B-PER", "O"]]
    # I-PER opens a new entity in the second sentence: both sides have 2 entities.
    result = ner_metrics(gold, pred, "BIO")
    assert result["num_gold_entities"] == 2 and result["f1"] == 1.0


def test_no_entities_anywhere_scores_zero():
    result = ner_metrics([["O", "O"], []], [["O", "O"], []], "BIO")
    assert (result["precision"], result["recall"], result["f1"]) == (0.0, 0.0, 0.0)
    assert result["per_type"] == {} and result["num_gold_entities"] == 0
    assert entity_counts([["O"], []], [["O"], []], "BIO") == [(0, 0, 0), (0, 0, 0)]


def test_entity_counts_are_consistent_with_ner_metrics():
    rng = random.Random(1234)
    for scheme in ("BIO", "BIOES", "BMES"):
        gold, pred = [], []
        for _ in range(60):
            length = rng.randint(0, 12)
            gold.append(random_tags(rng, length, scheme))
            # Half the predictions: the gold entities with some changes; half: random tags.
            pred.append(random_tags(rng, length, scheme) if rng.random() < 0.5
                        else perturb(rng, gold[-1], scheme))
        counts = entity_counts(gold, pred, scheme)
        result = ner_metrics(gold, pred, scheme)
        sums = tuple(sum(column) for column in zip(*counts))
        assert sums == (result["num_gold_entities"], result["num_predicted_entities"],
                        result["num_correct_entities"])
        num_gold, num_pred, num_correct = sums
        assert 0 < num_correct < min(num_gold, num_pred)
        assert result["precision"] == pytest.approx(num_correct / num_pred)
        assert result["recall"] == pytest.approx(num_correct / num_gold)
        assert result["f1"] == pytest.approx(2 * num_correct / (num_gold + num_pred))
        per_type = result["per_type"].values()
        assert sum(entry["support"] for entry in per_type) == num_gold


def random_tags(rng, length, scheme):
    """Random tags of the scheme's prefixes, most of them ill-formed."""
    prefixes = {"BIO": "OBI", "BIOES": "OBIES", "BMES": "OBMES"}[scheme]
    tags = []
    for _ in range(length):
        prefix = rng.choice(prefixes)
        tags.append("O" if prefix == "O" else f"{prefix}-{rng.choice(['PER', 'LOC'])}")
    return tags


def perturb(rng, tags, scheme):
    """The entities of `tags`, each kept with probability 0.8, as well-formed tags."""
    spans = [span for span in tags_to_spans(tags, scheme) if rng.random() < 0.8]
    return spans_to_tags(spans, len(tags), scheme)


def test_ner_errors():
    with pytest.raises(ValueError, match="sentence 1: 2 gold tags but 1 predicted"):
        ner_metrics([["O"], ["B-PER", "O"]], [["O"], ["B-PER"]], "BIO")
    with pytest.raises(ValueError, match="sentence 0"):
        entity_counts([["O"]], [["O", "O"]], "BIO")
    with pytest.raises(ValueError, match="2 gold sentences but 1 predicted"):
        ner_metrics([["O"], ["O"]], [["O"]], "BIO")
    with pytest.raises(ValueError, match="no sentences"):
        ner_metrics([], [], "BIO")
    with pytest.raises(TagSchemeError):
        ner_metrics([["B-PER"]], [["PER"]], "BIO")
    with pytest.raises(TagSchemeError):
        ner_metrics([["B-PER"]], [["B-PER"]], "IOB1")


def test_each_task_declares_the_metrics_its_score_reports():
    from finetune import tasks
    declared = {name: tasks.get_task(name).metrics for name in tasks.TASKS}
    assert declared == {"classification": ("accuracy", "macro_f1"),
                        "pair": ("accuracy", "macro_f1"), "ner": ("f1", "precision", "recall")}
    result = classification_metrics(["a"], ["a"], ["a"])
    assert set(declared["classification"]) <= set(result)
    assert set(declared["ner"]) <= set(ner_metrics([["O"]], [["O"]], "BIO"))
