"""Task metrics for fine-tuning: label classification (single sentences and pairs) and NER.

* `classification_metrics`: accuracy, macro-F1 and per-label precision /
  recall / F1 / support, as scikit-learn computes them with
  `zero_division=0` (a 0/0 ratio is 0.0); macro-F1 averages over the labels
  seen in gold or predicted, like `f1_score(average="macro")` without `labels`.
* `ner_metrics`: entity-level exact match of `(type, start, end)` chunks
  (`tag_schemes.tags_to_spans`, i.e. conlleval.pl / seqeval's default mode),
  micro-averaged over all sentences, with per-type figures; equal to seqeval's
  `precision_score` / `recall_score` / `f1_score` / `classification_report`.
* `entity_counts`: the per-sentence `(gold, predicted, correct)` entity counts
  whose sums give `ner_metrics`, for a bootstrap over sentences.

Every ratio is a Python float in [0, 1]. Mismatched or empty input raises
ValueError; a malformed tag raises `tag_schemes.TagSchemeError` (a ValueError).
"""
import collections

from finetune import tag_schemes



def _ratio(numerator, denominator):
    return float(numerator) / denominator if denominator else 0.0


def precision_recall_f1(num_correct, num_predicted, num_gold):
    """(precision, recall, F1) from counts; each 0.0 where its denominator is 0."""
    return (_ratio(num_correct, num_predicted), _ratio(num_correct, num_gold),
            _ratio(2 * num_correct, num_predicted + num_gold))


def _scores(num_correct, num_predicted, num_gold):
    precision, recall, f1 = precision_recall_f1(num_correct, num_predicted, num_gold)
    return {"precision": precision, "recall": recall, "f1": f1, "support": num_gold}


def classification_metrics(gold, predicted, labels):
    """Accuracy, macro-F1 and per-label scores of `predicted` against `gold`.

    `gold`, `predicted`: equal-length, non-empty sequences of labels. `labels`:
    the label set in id order; `per_label` has each of them, then any other
    label met in gold or predicted (in order of first appearance).
    Returns `{"accuracy", "macro_f1", "num_examples", "per_label": {label:
    {"precision", "recall", "f1", "support"}}}`.
    """
    gold, predicted = list(gold), list(predicted)
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predicted labels")
    if not gold:
        raise ValueError("no examples to score")
    gold_counts = collections.Counter(gold)
    predicted_counts = collections.Counter(predicted)
    correct_counts = collections.Counter(g for g, p in zip(gold, predicted) if g == p)
    ordered = list(dict.fromkeys(list(labels) + gold + predicted))
    per_label = {label: _scores(correct_counts[label], predicted_counts[label], gold_counts[label])
                 for label in ordered}
    seen = [label for label in ordered if gold_counts[label] or predicted_counts[label]]
    macro_f1 = sum(per_label[label]["f1"] for label in seen) / len(seen)
    return {"accuracy": _ratio(sum(correct_counts.values()), len(gold)),
            "macro_f1": macro_f1,
            "num_examples": len(gold),
            "per_label": per_label}


def _sentence_pairs(gold_tags, predicted_tags):
    gold_tags, predicted_tags = list(gold_tags), list(predicted_tags)
    if len(gold_tags) != len(predicted_tags):
        raise ValueError(f"{len(gold_tags)} gold sentences but {len(predicted_tags)} "
                         "predicted sentences")
    for index, (gold, predicted) in enumerate(zip(gold_tags, predicted_tags)):
        if len(gold) != len(predicted):
            raise ValueError(f"sentence {index}: {len(gold)} gold tags but {len(predicted)} "
                             "predicted tags")
    return list(zip(gold_tags, predicted_tags))


def _sentence_entities(gold, predicted, scheme):
    return (set(tag_schemes.tags_to_spans(gold, scheme)),
            set(tag_schemes.tags_to_spans(predicted, scheme)))


def entity_counts(gold_tags, predicted_tags, scheme):
    """`(num_gold, num_predicted, num_correct)` entities of each sentence, in order.

    `gold_tags`, `predicted_tags`: lists of tag sequences, of equal length
    sentence by sentence (else ValueError naming the sentence index).
    """
    scheme = tag_schemes.normalise_scheme(scheme)
    counts = []
    for gold, predicted in _sentence_pairs(gold_tags, predicted_tags):
        gold_spans, predicted_spans = _sentence_entities(gold, predicted, scheme)
        counts.append((len(gold_spans), len(predicted_spans), len(gold_spans & predicted_spans)))
    return counts


def ner_metrics(gold_tags, predicted_tags, scheme):
    """Entity-level micro precision / recall / F1 and per-type scores (conlleval).

    An entity is correct when type, start and end all match a gold entity of
    the same sentence. `per_type` has every type in gold or predicted, sorted;
    its `support` is the number of gold entities of the type. ValueError when
    there is no sentence or the sentences' lengths differ (naming the index).
    Returns `{"precision", "recall", "f1", "num_gold_entities",
    "num_predicted_entities", "num_correct_entities", "per_type"}`.
    """
    scheme = tag_schemes.normalise_scheme(scheme)
    pairs = _sentence_pairs(gold_tags, predicted_tags)
    if not pairs:
        raise ValueError("no sentences to score")
    gold_by_type = collections.Counter()
    predicted_by_type = collections.Counter()
    correct_by_type = collections.Counter()
    for gold, predicted in pairs:
        gold_spans, predicted_spans = _sentence_entities(gold, predicted, scheme)
        gold_by_type.update(span[0] for span in gold_spans)
        predicted_by_type.update(span[0] for span in predicted_spans)
        correct_by_type.update(span[0] for span in gold_spans & predicted_spans)
    num_gold = sum(gold_by_type.values())
    num_predicted = sum(predicted_by_type.values())
    num_correct = sum(correct_by_type.values())
    precision, recall, f1 = precision_recall_f1(num_correct, num_predicted, num_gold)
    types = sorted(set(gold_by_type) | set(predicted_by_type))
    return {"precision": precision, "recall": recall, "f1": f1,
            "num_gold_entities": num_gold,
            "num_predicted_entities": num_predicted,
            "num_correct_entities": num_correct,
            "per_type": {entity_type: _scores(correct_by_type[entity_type],
                                              predicted_by_type[entity_type],
                                              gold_by_type[entity_type])
                         for entity_type in types}}
