"""Train-time whole-word masking (pretrain.training.train_time_masking): what a drawn mask
covers, the 80/10/10 shares under transformers' names, the rate schedule, keyed and fixed
draws, and run_pretraining's refusals and runs on records made with --train_time_masking."""
import random

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from common.cli_options import UserError
from data_gen.modes.mlm.masking import _select_units
from pretrain import run_pretraining
from pretrain.training import input_pipeline
from pretrain.training.train_time_masking import RECORDS, MaskingPlan, masked_features
from tests.testutil.pretrain_data import (UNMASKED_SIDECAR, make_examples,
                                          make_unmasked_examples, run_options, tiny_config,
                                          write_records)

SEQ = 32
REPLACEMENTS = tuple(range(5, 25))


def _plan(rate=0.15, final_rate=None, total=1000, mask=0.8, random=0.1, slots=16, fixed=False):
    return MaskingPlan(rate, rate if final_rate is None else final_rate, total, 4, REPLACEMENTS,
                       mask, random, slots, fixed)


def _draw(examples, plan, keys, positions):
    """masked_features of each (example, key, position), as numpy dicts."""
    with tf.Graph().as_default():
        record = {name: tf.placeholder(tf.int32, [len(examples[0][name])])
                  for name in ("input_ids", "input_mask", "segment_ids", "word_ids",
                               "next_sentence_labels")}
        key = tf.placeholder(tf.int64, [2])
        position = tf.placeholder(tf.int64, [])
        out = masked_features(record, plan, key, position)
        with tf.Session() as session:
            return [session.run(out, {**{record[n]: example[n] for n in record},
                                      key: draw_key, position: place})
                    for example, draw_key, place in zip(examples, keys, positions)]


def _chosen(drawn):
    return drawn["masked_lm_positions"][drawn["masked_lm_weights"] > 0]


def test_a_mask_takes_whole_words_fills_its_budget_and_never_specials():
    examples = make_unmasked_examples(150, SEQ, seed=1)
    plan = _plan(rate=0.3, slots=10)
    drawn = _draw(examples, plan, [(7, i) for i in range(150)], range(150))
    counts = []
    for example, out in zip(examples, drawn):
        word_ids, ids = np.array(example["word_ids"]), np.array(example["input_ids"])
        chosen = _chosen(out)
        budget = min(10, max(1, int(np.round(0.3 * sum(example["input_mask"])))))
        assert len(chosen) <= budget and list(chosen) == sorted(set(chosen))
        assert (word_ids[chosen] > 0).all()  # never [CLS], [SEP] or padding
        for word in set(word_ids[chosen]):   # every token of a chosen word, none of the rest
            assert set(np.flatnonzero(word_ids == word)) <= set(chosen)
        counts.append(len(chosen))
        np.testing.assert_array_equal(out["masked_lm_ids"][:len(chosen)], ids[chosen])
        assert not out["masked_lm_ids"][len(chosen):].any()
        assert not out["masked_lm_positions"][len(chosen):].any()
        unchosen = np.setdiff1d(np.arange(SEQ), chosen)
        np.testing.assert_array_equal(out["input_ids"][unchosen], ids[unchosen])
        new = out["input_ids"][chosen]
        assert np.isin(new, (4,) + REPLACEMENTS).all()
        for name in ("input_mask", "segment_ids", "next_sentence_labels"):
            np.testing.assert_array_equal(out[name], example[name])
    # as many tokens as data_gen's static rule draws (google-research/bert's: a word that does
    # not fit is passed over for later ones) over the same words, within 2% on average
    rng, static = random.Random(0), []
    for example in examples:
        word_ids = example["word_ids"]
        units = [(word_ids.index(word), len(word_ids) - word_ids[::-1].index(word))
                 for word in sorted(set(word_ids) - {0})]
        budget = min(10, max(1, int(np.round(0.3 * sum(example["input_mask"])))))
        static.extend(len(_select_units(units, budget, rng)) for _ in range(20))
    assert abs(np.mean(counts) - np.mean(static)) < 0.02 * np.mean(static)


def test_the_replacement_shares_are_mask_replace_prob_and_random_replace_prob():
    examples = make_unmasked_examples(1, SEQ, seed=2) * 400
    drawn = _draw(examples, _plan(rate=0.5, mask=0.5, random=0.3),
                  [(3, i) for i in range(400)], range(400))
    original = np.array(examples[0]["input_ids"])
    new = np.concatenate([out["input_ids"][_chosen(out)] for out in drawn])
    old = np.concatenate([original[_chosen(out)] for out in drawn])
    total = len(new)
    assert total > 4000
    # [MASK] 0.5; a random one of the 20 replacements 0.3 (1 in 20 of them the token itself)
    for share, expected in (((new == 4).mean(), 0.5),
                            (((new != 4) & (new != old)).mean(), 0.3 * 19 / 20),
                            ((new == old).mean(), 0.2 + 0.3 / 20)):
        assert abs(share - expected) < 4 * np.sqrt(expected * (1 - expected) / total)


def test_the_rate_moves_linearly_from_mlm_probability_to_the_final_one():
    # one token per word, 32 real tokens: the count is round(rate * 32) exactly
    example = dict(make_unmasked_examples(1, SEQ, seed=0)[0])
    example.update(input_mask=[1] * SEQ, word_ids=[0] + list(range(1, SEQ - 1)) + [0])
    plan = _plan(rate=0.5, final_rate=0.1, total=1000, slots=16)
    counts = [len(_chosen(out)) for out in _draw([example] * 4, plan, [(1, 1)] * 4,
                                                 [0, 500, 1000, 5000])]
    assert counts == [16, 10, 3, 3]  # 0.5, 0.3 (9.6), 0.1 (3.2), and 0.1 past the end


def test_draws_follow_the_key_and_eval_draws_the_record_alone_decides():
    examples = make_unmasked_examples(2, SEQ, seed=4)
    plan = _plan(rate=0.3, final_rate=0.15)
    same = _draw([examples[0]] * 3, plan, [(1, 5), (1, 5), (2, 5)], [7, 7, 7])
    np.testing.assert_array_equal(same[0]["input_ids"], same[1]["input_ids"])
    assert not np.array_equal(_chosen(same[0]), _chosen(same[2]))
    eval_plan = RECORDS.prepared_for(plan, is_training=False)
    assert eval_plan.rate == eval_plan.final_rate == 0.15 and eval_plan.fixed
    fixed = _draw([examples[0]] * 3, eval_plan, [(1, 5), (9, 9), (9, 9)], [7, 7, 8])
    np.testing.assert_array_equal(fixed[0]["input_ids"], fixed[1]["input_ids"])
    np.testing.assert_array_equal(fixed[0]["masked_lm_positions"],
                                  fixed[1]["masked_lm_positions"])
    assert not np.array_equal(fixed[1]["input_ids"], fixed[2]["input_ids"])


def _write(tmp_path, name="u.tfrecord", count=24, seed=3):
    return write_records(tmp_path / name, make_unmasked_examples(count, 16, seed=seed),
                         mode="roberta", **UNMASKED_SIDECAR)


def _options(tmp_path, records, **flags):
    options = run_options(16, None, 4, bert_config_file=tiny_config(tmp_path / "cfg.json"),
                          input_file=records, output_dir=tmp_path / "out",
                          num_train_steps=2)
    options.update(flags)
    return options


@pytest.mark.parametrize("flags, message", [
    (dict(mlm_probability=0.6), r"--mlm_probability=0.6: must be in \(0, 0.5\]"),
    (dict(mlm_probability=0.3, final_mlm_probability=0.0), "--final_mlm_probability=0.0"),
    (dict(mlm_probability=0.3, max_predictions_per_seq=4),
     "--max_predictions_per_seq=4 holds fewer .* give --max_predictions_per_seq=5 or more"),
    (dict(mask_replace_prob=0.8, random_replace_prob=0.3),
     "--mask_replace_prob=0.8 \\+ --random_replace_prob=0.3 exceed 1"),
    (dict(span_boundary_objective=True), "--span_boundary_objective needs the span"),
])
def test_masking_flags_that_do_not_fit_are_refused_before_training(tmp_path, flags, message):
    with pytest.raises(UserError, match=message):
        run_pretraining.run(_options(tmp_path, _write(tmp_path), **flags))
    assert not (tmp_path / "out" / "checkpoint").exists()


def test_static_records_refuse_masking_flags_and_a_run_cannot_mix_the_two(tmp_path):
    static = write_records(tmp_path / "s.tfrecord", make_examples(8, sentence_task="none"),
                           mode="roberta")
    with pytest.raises(UserError, match="--mlm_probability: the input records were masked"):
        run_pretraining.run(_options(tmp_path, static, max_predictions_per_seq=4,
                                     mlm_probability=0.15))
    with pytest.raises(UserError, match="holds records to mask at train time but .*s.tfrecord"):
        run_pretraining.run(_options(tmp_path, _write(tmp_path), do_eval=True,
                                     eval_input_file=static))


def test_a_run_trains_on_them_and_its_evals_score_the_same_targets_whatever_the_seed(tmp_path):
    """BERT trains on them (ELECTRA: test_exact_resume's case) and its eval reads the final
    rate's fixed masks: the eval input of another seed holds the same targets."""
    records, held_out = _write(tmp_path), _write(tmp_path, "e.tfrecord", 16, seed=9)
    result = run_pretraining.run(_options(
        tmp_path, records, do_eval=True, eval_input_file=held_out, mlm_probability=0.3,
        final_mlm_probability=0.15, max_eval_steps=4))
    assert result["global_step"] == 2
    plan = RECORDS.prepared_for(_plan(rate=0.3, final_rate=0.15, slots=5), is_training=False)
    batches = []
    for seed in (1, 2):
        input_fn = input_pipeline.input_fn_builder(held_out, 16, 5, False, batch_size=4,
                                                   seed=seed, record_reader=RECORDS,
                                                   prepared=plan)
        with tf.Graph().as_default():
            batch = tf.data.make_one_shot_iterator(input_fn({})).get_next()
            with tf.Session() as session:
                batches.append([session.run(batch) for _ in range(4)])
    targets = sum(float(batch["masked_lm_weights"].sum()) for batch in batches[0])
    for first, second in zip(*batches):
        for name in ("input_ids", "masked_lm_positions", "masked_lm_ids"):
            np.testing.assert_array_equal(first[name], second[name])
    # 16 held-out records, 15% of 8-16 tokens each; the run's eval scored these targets
    assert result["eval_results"]["masked_lm_num_targets"] == targets
    assert 16 <= targets <= 16 * 3


def test_the_training_input_draws_new_masks_each_epoch(tmp_path):
    records = _write(tmp_path, count=4)
    plan = _plan(rate=0.3, slots=5)
    input_fn = input_pipeline.input_fn_builder(records, 16, 5, True, batch_size=4,
                                               shuffle_buffer=0, seed=1, record_reader=RECORDS,
                                               prepared=plan)
    with tf.Graph().as_default():
        batch = tf.data.make_one_shot_iterator(input_fn({})).get_next()
        with tf.Session() as session:
            epochs = [session.run(batch) for _ in range(3)]
    unmasked = np.array([e["input_ids"] for e in make_unmasked_examples(4, 16, seed=3)])
    for epoch in epochs:  # the same records in file order ...
        restored = epoch["input_ids"].copy()
        for row in range(4):
            count = int(epoch["masked_lm_weights"][row].sum())
            restored[row, epoch["masked_lm_positions"][row, :count]] = (
                epoch["masked_lm_ids"][row, :count])
        np.testing.assert_array_equal(restored, unmasked)
    # ... masked anew each time they are read
    assert not np.array_equal(epochs[0]["masked_lm_positions"], epochs[1]["masked_lm_positions"])
    assert not np.array_equal(epochs[1]["masked_lm_positions"], epochs[2]["masked_lm_positions"])
