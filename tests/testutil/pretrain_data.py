"""Tiny pretraining TFRecords (+ data_gen-style sidecars) written by the tests themselves."""
import glob
import json
import os
import pathlib

import numpy as np
import tensorflow as tf

from tests.testutil.float32_bounds import EPS32, assert_close, encoder_ulps, magnitude, summation_ulps, tolerance
from pretrain.models.electra.config import ElectraConfig


def _counting_sequence(rng, max_seq_length):
    """(length, ids): [CLS]=2, ids counting up from a random start mod 20 (5..24), [SEP]=3."""
    length = int(rng.randint(max_seq_length // 2, max_seq_length + 1))
    start = int(rng.randint(0, 20))
    return length, [2] + [5 + (start + i) % 20 for i in range(length - 2)] + [3]


def make_examples(count, max_seq_length=16, max_predictions_per_seq=4, vocab_size=50,
                  sentence_task="sop", seed=0):
    """`count` feature dicts shaped like data_gen's records.

    Tokens come from a small id range (5..24) with a simple dependency (a
    masked token equals its left neighbour + 1 mod 20) so a model can learn.
    """
    rng = np.random.RandomState(seed)
    examples = []
    for _ in range(count):
        length, ids = _counting_sequence(rng, max_seq_length)
        positions = sorted(rng.choice(np.arange(1, length - 1), size=max_predictions_per_seq,
                                      replace=False).tolist())
        labels = [ids[p] for p in positions]
        masked = list(ids)
        for p in positions:
            masked[p] = 4  # [MASK]
        pad = max_seq_length - length
        label = int(rng.randint(0, 2)) if sentence_task != "none" else 0
        examples.append({
            "input_ids": masked + [0] * pad,
            "input_mask": [1] * length + [0] * pad,
            "segment_ids": ([0] * (length // 2) + [1] * (length - length // 2) + [0] * pad
                            if sentence_task != "none" else [0] * max_seq_length),
            "masked_lm_positions": positions,
            "masked_lm_ids": labels,
            "masked_lm_weights": [1.0] * max_predictions_per_seq,
            "next_sentence_labels": [label],
        })
    return examples


def make_span_examples(count, max_seq_length=16, max_predictions_per_seq=4, seed=0):
    """Like `make_examples` (roberta-style: no sentence task), with SpanBERT span masking:
    one or two spans of 1-3 tokens masked as wholes, and each prediction's span boundaries
    (`masked_lm_span_left` / `_right`: the positions just outside its span, 0-padded).

    A masked token is its left boundary's token + its offset in the span (mod 20), so the
    boundary states and relative position alone predict it.
    """
    rng = np.random.RandomState(seed)
    examples = []
    for _ in range(count):
        length = int(rng.randint(max_seq_length // 2 + 2, max_seq_length + 1))
        start = int(rng.randint(0, 20))
        ids = [2] + [5 + (start + i) % 20 for i in range(length - 2)] + [3]
        spans = []  # (first, end): up to two separate spans within the prediction budget
        for _ in range(10):
            width = int(rng.randint(1, 4))
            first = int(rng.randint(1, length - width))  # inside [CLS] ... [SEP]
            used = sum(end - begin for begin, end in spans)
            if used + width <= max_predictions_per_seq and all(
                    first + width < begin or end < first for begin, end in spans):
                spans.append((first, first + width))
            if len(spans) == 2:
                break
        spans.sort()
        positions = [p for begin, end in spans for p in range(begin, end)]
        lefts = [begin - 1 for begin, end in spans for _ in range(begin, end)]
        rights = [end for begin, end in spans for _ in range(begin, end)]
        taken = set(positions)
        real = len(positions)
        pad = max_predictions_per_seq - real
        masked = [4 if i in taken else t for i, t in enumerate(ids)]
        seq_pad = max_seq_length - length
        examples.append({
            "input_ids": masked + [0] * seq_pad,
            "input_mask": [1] * length + [0] * seq_pad,
            "segment_ids": [0] * max_seq_length,
            "masked_lm_positions": positions + [0] * pad,
            "masked_lm_ids": [ids[p] for p in positions] + [0] * pad,
            "masked_lm_weights": [1.0] * real + [0.0] * pad,
            "next_sentence_labels": [0],
            "masked_lm_span_left": lefts + [0] * pad,
            "masked_lm_span_right": rights + [0] * pad,
        })
    return examples


def _example_proto(features):
    feature = {}
    for name, values in features.items():
        if name == "masked_lm_weights":
            feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
        else:
            feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    return tf.train.Example(features=tf.train.Features(feature=feature))


def write_records(path, examples, compression="none", sidecar=True, mode="albert",
                  vocab_size=50, **meta_overrides):
    """Writes `examples` to `path` (GZIP when compression="gzip") and `path.meta.json`."""
    path = str(path)
    options = tf.io.TFRecordOptions(compression_type="GZIP" if compression == "gzip" else "")
    with tf.io.TFRecordWriter(path, options=options) as writer:
        for ex in examples:
            writer.write(_example_proto(ex).SerializeToString())
    if sidecar:
        meta = {
            "format_version": 1, "tool": "tests", "mode": mode,
            "sentence_task": {"roberta": "none", "albert": "sop", "bert": "nsp",
                              "xlnet": "none"}[mode],
            "max_seq_length": len(examples[0].get("input_ids") or examples[0]["input"]),
            "max_predictions_per_seq": (sum(examples[0]["is_masked"]) if mode == "xlnet"
                                        else len(examples[0].get("masked_lm_ids", ()))),
            "has_token_boundary": False, "compression": compression,
            "vocab_size": vocab_size,
            "max_token_id": int(max(max(e.get("input_ids") or e["input"]) for e in examples)),
            "file_counts": {"instances": len(examples)},
        }
        meta.update(meta_overrides)
        with open(path + ".meta.json", "w", encoding="utf-8") as f:
            json.dump(meta, f)
    return path


def tiny_config(path, vocab_size=50, hidden=32, layers=2, max_position=32, dropout=0.0, **extra):
    cfg = {"vocab_size": vocab_size, "hidden_size": hidden, "num_hidden_layers": layers,
           "num_attention_heads": 2, "intermediate_size": hidden * 2, "hidden_act": "gelu",
           "hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout,
           "max_position_embeddings": max_position, "type_vocab_size": 2,
           "initializer_range": 0.02}
    cfg.update(extra)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return str(path)


# tiny_config's extra fields for an ELECTRA whose replacements are the generator's argmax:
# at temperature 1e-7 the Gumbel noise (within [-3.1, 20.7]) decides only between logits
# closer than 2.4e-6, so the samples are the same on every device layout and rerun, and
# tests can compare runs weight for weight (at temperature 1 each replica, shape and
# session draws its own noise).
ARGMAX_ELECTRA = dict(model_type="electra", embedding_size=16, generator_hidden_size=0.5,
                      temperature=1e-7)


def rename_slots_to_legacy(output_dir, legacy="AdamWeightDecay"):
    """Rewrites the latest checkpoint with the optimizer slots under the pre-0.2 names."""
    prefix = tf.compat.v1.train.latest_checkpoint(output_dir)
    reader = tf.compat.v1.train.load_checkpoint(prefix)
    suffixes = {"/adam_m": f"/{legacy}", "/adam_v": f"/{legacy}_1"}
    renamed = {}
    for name in reader.get_variable_to_shape_map():
        new = name
        for suffix, old in suffixes.items():
            if name.endswith(suffix):
                new = name[:-len(suffix)] + old
        renamed[new] = reader.get_tensor(name)
    for path in glob.glob(prefix + ".*"):
        os.remove(path)
    with tf.Graph().as_default():
        variables = {n: tf.compat.v1.Variable(v, name="v%d" % i) for i, (n, v) in enumerate(renamed.items())}
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver(variables).save(sess, prefix, write_meta_graph=False,
                                           write_state=False)
    return sorted(renamed)



# The sidecar fields of data_gen --train_time_masking records made with make_unmasked_examples'
# ids: [MASK] 4, random replacements 5..24 (data_gen.modes.mlm.masking.train_time_sidecar).
UNMASKED_SIDECAR = {"train_time_masking": True, "max_predictions_per_seq": None,
                    "mask_id": 4, "replacement_ids": "5-24"}


def make_unmasked_examples(count, max_seq_length=16, seed=0, sentence_task="none"):
    """`count` records shaped like data_gen --train_time_masking's: make_examples' token
    pattern unmasked, in words of 1-3 tokens (word_ids 1.., 0 at [CLS]/[SEP]/padding)."""
    rng = np.random.RandomState(seed)
    examples = []
    for _ in range(count):
        length, ids = _counting_sequence(rng, max_seq_length)
        word_ids, word = [0], 0
        while len(word_ids) < length - 1:
            word += 1
            word_ids.extend([word] * min(int(rng.randint(1, 4)), length - 1 - len(word_ids)))
        pad = max_seq_length - length
        label = int(rng.randint(0, 2)) if sentence_task != "none" else 0
        examples.append({
            "input_ids": ids + [0] * pad, "input_mask": [1] * length + [0] * pad,
            "segment_ids": ([0] * (length // 2) + [1] * (length - length // 2) + [0] * pad
                            if sentence_task != "none" else [0] * max_seq_length),
            "word_ids": word_ids + [0] * (pad + 1), "next_sentence_labels": [label],
        })
    return examples


def run_options(seq, preds, batch, **options):
    """run_pretraining.run options of a tiny deterministic test run: train in input order
    (no shuffle buffer, seed 1), checkpoints only at the end, one eval batch; `options`
    give bert_config_file, input_file, output_dir and override the rest."""
    defaults = dict(do_train=True, max_seq_length=seq, max_predictions_per_seq=preds,
                    train_batch_size=batch, eval_batch_size=batch, num_warmup_steps=0,
                    save_checkpoints_steps=1000, random_seed=1, shuffle_buffer=0,
                    max_eval_steps=1)
    defaults.update(options)
    defaults["output_dir"] = str(defaults["output_dir"])
    return defaults


# XLNet records (data_gen --mode=xlnet's layout): ids 1 <sep>, 2 <cls>, 3 <eod>; text 5..24.
XLNET_SPECIAL_IDS = {"sep": 1, "cls": 2, "eod": 3, "mask": 4, "pad": 0}


def make_xlnet_examples(count, max_seq_length=16, reuse_length=8, num_predict=4, seed=0):
    """`count` records shaped like data_gen's xlnet mode: reuse window, A, <sep>, B, <sep>,
    <cls>; the text counts up by one (mod 20) so a predicted token follows from its
    neighbours; `num_predict` positions of A and B masked."""
    rng = np.random.RandomState(seed)
    sep, cls = XLNET_SPECIAL_IDS["sep"], XLNET_SPECIAL_IDS["cls"]
    examples = []
    for _ in range(count):
        start = int(rng.randint(0, 20))
        text = [5 + (start + i) % 20 for i in range(max_seq_length - 3)]
        cut = int(rng.randint(reuse_length + 1, max_seq_length - 3))  # A is [reuse, cut)
        ids = text[:cut] + [sep] + text[cut:] + [sep, cls]
        seg = [0] * (cut + 1) + [1] * (max_seq_length - 2 - cut) + [2]
        candidates = [i for i in range(reuse_length, max_seq_length) if ids[i] not in (sep, cls)]
        masked = set(rng.choice(candidates, num_predict, replace=False).tolist())
        examples.append({"input": ids, "target": ids[1:] + [cls],
                         "seg_id": seg, "is_masked": [int(i in masked) for i in range(len(ids))],
                         "label": [1]})
    return examples


def write_xlnet_records(path, examples, reuse_length=8, vocab_size=50, **meta_overrides):
    """Writes XLNet `examples` to `path` with an xlnet-mode sidecar."""
    return write_records(path, examples, mode="xlnet", vocab_size=vocab_size,
                         reuse_length=reuse_length, xlnet_special_ids=XLNET_SPECIAL_IDS,
                         tokenizer="wordpiece", **meta_overrides)


def tiny_xlnet_config(path, n_token=50, d_model=32, layers=2, **extra):
    cfg = {"model_type": "xlnet", "n_token": n_token, "d_model": d_model, "n_layer": layers,
           "n_head": 2, "d_head": d_model // 2, "d_inner": d_model * 2,
           "ff_activation": "gelu", "untie_r": True, "dropout": 0.0, "dropatt": 0.0}
    cfg.update(extra)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return str(path)


# ---- bounds for comparing two trainings (tests/testutil/float32_bounds.py, case 2, through Adam) ----
ADAM_BETAS = (0.9, 0.999)
# One Adam / LAMB update's own roundings, in ulps of the step: m (two products and a sum), v
# (three), the sqrt, + epsilon, the divide, the bias corrections (three), the decay's product
# and sum, x lr, LAMB's trust-ratio product, the subtraction; and float32's 1 - 0.9, 2 ulps
# off 0.1 (the fused kernel's 1 - beta_1).
UPDATE_ROUNDINGS = 16


def adam_step_max(update, bias_correction=False):
    """The largest |m| / sqrt(v) of Adam's `update`-th update (1-based), whatever the
    gradients: Cauchy-Schwarz on the sums over past gradients that m and v are gives
    (1 - b1) / sqrt(1 - b2) * sqrt(sum_{k < t} (b1^2 / b2)^k), 3.16 at the first update and
    below 7.27 ever (sign-like: a single gradient's step is +-3.16 whatever its size; epsilon
    only shrinks it); bias correction multiplies it by sqrt(1 - b2^t) / (1 - b1^t)."""
    beta_1, beta_2 = ADAM_BETAS
    ratio = (1 - beta_1) / np.sqrt(1 - beta_2) * np.sqrt(
        sum((beta_1 ** 2 / beta_2) ** k for k in range(update)))
    if bias_correction:
        ratio *= np.sqrt(1 - beta_2 ** update) / (1 - beta_1 ** update)
    return float(ratio)


def norm_ulps(width):
    """A float32 2-norm of `width` terms: its sum of squares (half its bound after the sqrt),
    the squares and the sqrt."""
    return summation_ulps(width) / 2 + 2 if width else 0.0


def weight_drift(learning_rates, gradient_ulps, weight_scale, *, clip_width=0, lamb_norm=0.0,
                 lamb_width=0, weight_decay=0.0, bias_correction=False):
    """Bound on |w_a - w_b| (absolute, any weight) after one update per learning rate of two
    float32 trainings from the same weights whose gradients differ by rounding only, by at
    most `gradient_ulps` ulps of the gradients' magnitude (float32_bounds case 2, first order).

    Update t moves a weight by at most lr_t * (adam_step_max(t) + weight_decay * |w|), or
    lr_t * `lamb_norm` (the largest ||w|| of a LAMB-adapted tensor: its trust ratio scales the
    step to it). The step's relative error is at most 2 * gradient_ulps (once through m, once
    through sqrt(v); a common factor cancels), twice the global norm's of `clip_width`
    gradients when it clips them, LAMB's two norms of `lamb_width` terms and their ratio's
    divide, and the update's own UPDATE_ROUNDINGS. The weights' drift so far enters the next
    gradients too: the loss's curvature times |w| is of the order of |g| in these
    O(1)-scaled problems, so a drift of d moves the gradients by about d / `weight_scale`
    (the largest |w|) relatively. Each update also rounds the weight itself (1 ulp of
    `weight_scale`). Where the weights may move further than this bound (a gradient that
    cancels to noise, whose sign Adam follows), epsilon = 1e-6 keeps the step m / epsilon
    small: such noise is far below it here.
    """
    drift = 0.0
    for update, lr in enumerate(learning_rates, start=1):
        step = adam_step_max(update, bias_correction) + weight_decay * weight_scale
        movement = lr * max(step, lamb_norm)
        relative = (2 * (gradient_ulps + norm_ulps(clip_width) + drift / tolerance(1, weight_scale))
                    + (2 * norm_ulps(lamb_width) + 1 if lamb_width else 0) + UPDATE_ROUNDINGS)
        drift += tolerance(1, weight_scale) + movement * relative * EPS32
    return drift


def moment_ulps(gradient_ulps, drift, weight_scale, clip_width=0):
    """Bound, in ulps of Adam's m (twice it for v, a sum of squares), on two trainings whose
    weights differ by at most `drift`: m is an average of the clipped gradients (three
    roundings per update), each off by gradient_ulps, the clip norm's error and the
    drift's (as in weight_drift). For m this takes the gradients to keep their sign over
    the few updates compared (else |m| understates its terms)."""
    return gradient_ulps + norm_ulps(clip_width) + drift / tolerance(1, weight_scale) + 3


def encoder_gradient_ulps(hidden, intermediate, seq_length, heads, layers, tokens,
                          extra_widths=()):
    """gradient_ulps of a transformer's weights (float32_bounds case 2): back through the
    forward's longest chain (encoder_ulps, with `extra_widths` for the heads and
    embedding projections), whose transposed matmuls and the elementwise functions'
    derivatives sum and round as many terms again, then a weight's sum over the `tokens`
    of the batch (dW = X^T dY; an embedding row's segment sum)."""
    forward = encoder_ulps(hidden, intermediate, seq_length, heads, layers, extra_widths)
    return 2 * forward + summation_ulps(tokens)


def assert_trained_alike(got, want, names, drift, m_ulps):
    """Checkpoint readers `got` and `want` of two trainings: each weight in `names` within
    `drift` (weight_drift), each Adam m within `m_ulps` (moment_ulps) and v within twice
    that (squares). A slot's ulps are those of the largest slot of its kind: a gradient's
    rounding is relative to its terms, of the order of the model's largest gradient, and
    some gradients cancel to rounding noise (the attention keys' bias: softmax ignores a
    constant per query)."""
    slot_scale = {}
    for suffix in ("/adam_m", "/adam_v"):
        slots = [magnitude(want.get_tensor(n)) for n in names if n.endswith(suffix)]
        slot_scale[suffix] = max(slots) if slots else None
    for name in names:
        expected = want.get_tensor(name)
        if name.endswith("/adam_m"):
            ulps, scale = m_ulps, slot_scale["/adam_m"]
        elif name.endswith("/adam_v"):
            ulps, scale = 2 * m_ulps, slot_scale["/adam_v"]
        else:
            ulps, scale = drift / tolerance(1, magnitude(expected)), None
        assert_close(got.get_tensor(name), expected, ulps, scale=scale, err_msg=name)


# google-research/electra's variables for a few hparams (make_upstream_variables.py)
ELECTRA_FIXTURE = (pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "electra"
                   / "upstream_variables.json")
CASES = json.loads(ELECTRA_FIXTURE.read_text(encoding="utf-8"))["cases"]


def electra_config(hparams):
    """Our ElectraConfig for upstream's hparams (training_utils.get_bert_config's rule:
    heads hidden // 64, at least 1; intermediate 4 x hidden)."""
    bert = dict(hparams["model_hparam_overrides"])
    bert.update(vocab_size=hparams["vocab_size"], intermediate_size=4 * bert["hidden_size"],
                num_attention_heads=max(1, bert["hidden_size"] // 64))
    electra = {name: hparams[name] for name in (
        "embedding_size", "generator_hidden_size", "generator_layers",
        "untied_generator_embeddings") if name in hparams}
    return ElectraConfig(model_type="electra", **bert, **electra)
