"""Named-entity recognition: one tag for every input character (or CoNLL token).

Reading: finetune.formats: CoNLL-style `char tag` lines (BIO/IOB2, BIOES or
BMES, detected from the training tags or given by --tag_scheme), or CLUENER
JSON spans (turned into BIO tags). The tag list is "O" then the training
file's other tags, sorted. Predicted tags are in the input's own scheme; for
CLUENER input the prediction also carries the spans in CLUENER's form.

Records (record_schema "token"): each input token is tokenised on its own;
its first WordPiece carries its tag (a digit run or Latin word that WordPiece
splits is labelled on its first piece, the other pieces are not scored). A
sentence longer than max_seq_length - 2 pieces is cut into consecutive
windows at token boundaries, `[CLS] window [SEP]` each (for XLNet `window [SEP]
[CLS]`, finetune.tasks.layout), so no token is dropped; a token that tokenises to nothing (a space, a control character) is
predicted "O" and counted. With a sentencepiece model (XLNet's spiece.model) a token's
pieces are those it has inside its sentence: without the "▁" sentencepiece puts before
a text (data_gen.text.spm_tokenization.SpmFullTokenizer.tokenize_token).

Head: the sequence output -> `token_classifier/output_weights` [N, H],
`token_classifier/output_bias` [N] (pretrain.models.task_heads) -> softmax
cross-entropy averaged over the labelled pieces.
"""
import numpy as np
import tensorflow.compat.v1 as tf

from finetune import formats, metrics, tag_schemes
from finetune.tasks import layout as layout_lib
from finetune.tasks.base import COLLAPSE_SHARE, Task, TaskDataError, check_known_labels
from pretrain.models import registry, task_heads

CLUENER_SCHEME = "BIO"


class NerTask(Task):
    name = "ner"
    record_kind = "token"
    metric_kind = "ner"
    metrics = ("f1", "precision", "recall")

    def __init__(self):
        self.scheme = None
        self.from_spans = False
        self.sequence_problems = {}

    # ---- reading -------------------------------------------------------------------------
    def read(self, path, options, require_labels, log_fn):
        examples, account = formats.read_tagged_examples(
            path, format=options.get("input_format") or None, require_labels=require_labels,
            log_fn=log_fn)
        for example in examples:
            if example.spans is not None:
                self.from_spans = True
                example.tags = tag_schemes.spans_to_tags(example.spans, len(example.chars),
                                                         CLUENER_SCHEME)
        return examples, account

    def label_list(self, train_examples, options, path="--train_file"):
        tags = {tag for example in train_examples for tag in example.tags}
        try:
            if self.from_spans:
                self.scheme = CLUENER_SCHEME
            elif options.get("tag_scheme"):
                self.scheme = tag_schemes.normalise_scheme(options["tag_scheme"])
            else:
                self.scheme = tag_schemes.detect_scheme(tags)
            for tag in tags:
                prefix, _ = tag_schemes.parse_tag(tag)
                if prefix != "O" and prefix not in _PREFIXES[self.scheme]:
                    raise tag_schemes.TagSchemeError(
                        f"tag {tag!r} is not a {self.scheme} tag (prefixes "
                        f"{', '.join(_PREFIXES[self.scheme])})")
        except tag_schemes.TagSchemeError as error:
            raise TaskDataError(f"{path}: {error}; tags must be O or PREFIX-TYPE in one "
                                "of BIO/IOB2, BIOES or BMES (--tag_scheme names it)") from None
        return ["O"] + sorted(tags - {"O"})

    def check_labels(self, examples, labels, path, allow_unseen):
        unseen = check_known_labels(((e.line, tag) for e in examples if e.tags
                                     for tag in e.tags), labels, path, allow_unseen, what="tag")
        problems = [(e.line, index, reason) for e in examples if e.tags
                    for index, reason in tag_schemes.sequence_problems(e.tags, self.scheme)]
        self.sequence_problems[path] = len(problems)
        return unseen

    # ---- records -------------------------------------------------------------------------
    def featurize(self, examples, tokenizer, max_seq_length, labels, condition_size=None,
                  path=None, layout=layout_lib.BERT_LAYOUT):
        """Returns (feature dicts, plan, counts).

        plan[r] = (example index, [(position, token index), ...]) of record r.
        """
        if condition_size is not None:
            raise TaskDataError("NER fine-tuning does not feed a condition: use a model "
                                "config without layer_norm_cond_size")
        if max_seq_length < 3:
            raise TaskDataError(f"--max_seq_length={max_seq_length}: NER needs at least 3")
        index = {tag: i for i, tag in enumerate(labels)}
        budget = max_seq_length - 2
        pieces_of = {}
        cls_id, sep_id = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
        pad_id = layout_lib.pad_id(tokenizer)
        # A token's pieces as inside its sentence (a sentencepiece model's tokenize_token
        # leaves out the "▁" it puts before a text); WordPiece: tokenize.
        split = getattr(tokenizer, "tokenize_token", tokenizer.tokenize)
        features, plan = [], []
        counts = {"examples": len(examples), "records": 0, "tokens": 0,
                  "tokens_without_pieces": 0, "split_sentences": 0, "pieces_truncated": 0}

        cls_last = not layout.cls_first  # window [SEP] [CLS] (finetune.tasks.layout)

        def emit(example_index, window, tags):
            ids, label_ids, weights, positions = ([], [], [], []) if cls_last else (
                [cls_id], [0], [0.0], [])
            for token_index, piece_ids in window:
                positions.append((len(ids), token_index))
                label_ids += [index.get(tags[token_index], 0) if tags else 0] + [0] * (
                    len(piece_ids) - 1)
                weights += [1.0] + [0.0] * (len(piece_ids) - 1)
                ids += piece_ids
            ends = [sep_id, cls_id] if cls_last else [sep_id]
            ids += ends
            label_ids += [0] * len(ends)
            weights += [0.0] * len(ends)
            segment_ids = [0] * (len(ids) - 1) + [layout.cls_segment]
            padding = max_seq_length - len(ids)
            features.append({"input_ids": ids + [pad_id] * padding,
                             "input_mask": [1] * len(ids) + [0] * padding,
                             "segment_ids": segment_ids + [0] * padding,
                             "label_ids": label_ids + [0] * padding,
                             "label_weights": weights + [0.0] * padding})
            plan.append((example_index, positions))

        for example_index, example in enumerate(examples):
            window, used, windows = [], 0, 0
            for token_index, token in enumerate(example.chars):
                counts["tokens"] += 1
                if token not in pieces_of:
                    pieces_of[token] = tokenizer.convert_tokens_to_ids(split(token))
                piece_ids = pieces_of[token]
                if not piece_ids:
                    counts["tokens_without_pieces"] += 1
                    continue
                if len(piece_ids) > budget:
                    counts["pieces_truncated"] += len(piece_ids) - budget
                    piece_ids = piece_ids[:budget]
                if used + len(piece_ids) > budget:
                    emit(example_index, window, example.tags)
                    window, used, windows = [], 0, windows + 1
                window.append((token_index, piece_ids))
                used += len(piece_ids)
            if window or not windows:
                emit(example_index, window, example.tags)
                windows += 1
            counts["split_sentences"] += windows > 1
        counts["records"] = len(features)
        return features, plan, counts

    # ---- model ---------------------------------------------------------------------------
    def build_model(self, config, is_training, features, label_tensor, num_labels,
                    compute_type=tf.float32):
        """Loss = cross-entropy averaged over labelled pieces; outputs tag_probabilities [B, S, N]."""
        model = registry.create_encoder(config, is_training, features["input_ids"],
                                        input_mask=features["input_mask"],
                                        token_type_ids=features["segment_ids"],
                                        compute_type=compute_type)
        logits, probabilities = task_heads.get_token_classifier_output(
            config, model.get_sequence_output(), num_labels, is_training)
        outputs = {"tag_probabilities": probabilities}
        if label_tensor is None:
            return None, None, outputs
        weights = features["label_weights"]                                    # [B, S]
        log_probs = tf.nn.log_softmax(logits, axis=-1)                          # [B, S, N]
        one_hot = tf.one_hot(label_tensor, depth=num_labels, dtype=tf.float32)
        token_loss = -tf.reduce_sum(one_hot * log_probs, axis=-1) * weights    # [B, S]
        per_example_loss = tf.reduce_sum(token_loss, axis=-1) / tf.maximum(
            tf.reduce_sum(weights, axis=-1), 1.0)                               # [B]
        loss = tf.reduce_sum(token_loss) / tf.maximum(tf.reduce_sum(weights), 1.0)
        return loss, per_example_loss, outputs

    # ---- predictions and scores ----------------------------------------------------------
    def collect(self, examples, plan, predictions, labels):
        """Predicted tags per example ("O" for tokens without pieces) and the mean
        cross-entropy over the gold-tagged tokens."""
        predicted = [["O"] * len(example.chars) for example in examples]
        index = {tag: i for i, tag in enumerate(labels)}
        losses, count = 0.0, 0
        for (example_index, positions), prediction in zip(plan, predictions):
            probabilities = prediction["tag_probabilities"]
            gold = examples[example_index].tags
            for position, token_index in positions:
                row = probabilities[position]
                predicted[example_index][token_index] = labels[int(np.argmax(row))]
                if gold and gold[token_index] in index:
                    losses -= float(np.log(max(row[index[gold[token_index]]], 1e-12)))
                    count += 1
        if len(predictions) != len(plan):
            raise RuntimeError(f"got {len(predictions)} predictions for {len(plan)} records")
        return {"predicted": predicted, "loss": losses / count if count else None}

    def score(self, examples, collected, labels):
        pairs = [(e.tags, p) for e, p in zip(examples, collected["predicted"]) if e.tags]
        if not pairs:
            return None
        gold, predicted = zip(*pairs)
        result = metrics.ner_metrics(list(gold), list(predicted), self.scheme)
        result["loss"] = collected["loss"]
        return result

    def collapse(self, examples, collected):
        """(Nearly) everything tagged O: the model tags under 1 - COLLAPSE_SHARE as many
        tokens as the gold tags mark as entities."""
        gold = predicted = 0
        for example, tags in zip(examples, collected["predicted"]):
            if example.tags:
                gold += sum(tag != "O" for tag in example.tags)
                predicted += sum(tag != "O" for tag in tags)
        collapsed = gold > 0 and predicted < (1.0 - COLLAPSE_SHARE) * gold
        return {"collapsed": collapsed, "predicted_entity_tokens": predicted,
                "gold_entity_tokens": gold,
                "what": (f"tags {predicted} dev tokens as entities where the gold tags mark "
                         f"{gold}: nearly everything is O")}

    def prediction_records(self, examples, collected, labels):
        for example, tags in zip(examples, collected["predicted"]):
            record = {"line": example.line, "tags": tags}
            if self.from_spans:
                spans = {}
                for entity_type, start, end in tag_schemes.tags_to_spans(tags, self.scheme):
                    mention = "".join(example.chars[start:end])
                    spans.setdefault(entity_type, {}).setdefault(mention, []).append(
                        [start, end - 1])
                record = {"line": example.line, "text": example.text, "label": spans,
                          "tags": tags}
            yield record

    def description(self, labels, options):
        return dict(super().description(labels, options), tag_scheme=self.scheme)


_PREFIXES = {"BIO": ("B", "I"), "BIOES": ("B", "I", "E", "S"), "BMES": ("B", "M", "E", "S")}
