"""The masking recipes past whole-word masking: span (SpanBERT) and macbert (MacBERT).

Distributions on large samples, whole words never split, same token counts,
span boundaries, and the C MaskEncoder giving Python's draws and bytes.
"""
import collections
import functools
import random

import pytest

from data_gen.records import example_proto
from data_gen.modes.mlm import masking
from data_gen.records.example_proto import InstanceEncoder

try:
    NATIVE = example_proto.records_module(True)
except ImportError:
    NATIVE = None
needs_c = pytest.mark.skipif(NATIVE is None, reason="C extension not built")

MASK_ID = 4
REPLACEMENTS = list(range(100, 600))
# Chi-square critical values at p = 0.001 (df = categories - 1).
CHI2_CRITICAL_001 = {3: 16.27, 9: 27.88}


def _config(recipe, prob=0.15, cap=20, similar=None):
    return masking.MaskingConfig(prob, cap, MASK_ID, REPLACEMENTS, True, 3, recipe, similar)


def _expected_shares(recipe):
    weights = masking.span_length_weights(recipe)
    return [weight / sum(weights) for weight in weights]


def _chi_square(counts, shares):
    total = sum(counts.values())
    return sum((counts.get(n, 0) - total * share) ** 2 / (total * share)
               for n, share in enumerate(shares, start=1))


def _one_token_words(length):
    """[CLS] + `length` one-token words + [SEP]: (ids, starts)."""
    return [2] + [1000 + i for i in range(length)] + [3], [-1] + [1] * length + [-1]


def _random_words(rng, length, segments=2):
    """[CLS] A [SEP] (B [SEP]) with words of 1-4 tokens: (ids, starts)."""
    starts = [-1]
    while len(starts) < length - 1:
        size = rng.choice((1, 1, 2, 2, 3, 4))
        starts += [1] + [0] * (size - 1)
    starts = starts[:length - 1] + [-1]
    if segments == 2 and length > 6:
        middle = rng.randrange(2, length - 2)
        starts[middle] = -1
        if starts[middle + 1] == 0:
            starts[middle + 1] = 1
    ids = [2 if start < 0 else rng.randrange(1000, 1100) for start in starts]
    return ids, starts


@pytest.mark.parametrize("recipe", ["span", "macbert"])
def test_drawn_lengths_follow_the_recipe(recipe):
    """The length draw itself: Geometric(0.2) truncated at 10 words / 40-30-20-10%."""
    config = _config(recipe, similar={})
    shares = _expected_shares(recipe)
    rng = random.Random(7)
    counts = collections.Counter(masking._draw_n(rng.random, config.ngram_cumulative)
                                 for _ in range(40000))
    assert set(counts) <= set(range(1, len(shares) + 1))
    assert _chi_square(counts, shares) < CHI2_CRITICAL_001[len(shares) - 1]


@pytest.mark.parametrize("recipe", ["span", "macbert"])
def test_masked_span_lengths_follow_the_recipe(recipe):
    """Spans actually masked, in words, on long sequences with a small budget: only about
    2% are cut short (the last one, by the budget; a few by a covered word), so their
    histogram passes a chi-square test."""
    config = _config(recipe, prob=0.01, cap=10000, similar={})
    shares = _expected_shares(recipe)
    counts = collections.Counter()
    ids, starts = _one_token_words(20000)
    for seed in range(60):
        _, positions, _, left, right = masking.mask_spans(ids, starts, random.Random(seed),
                                                          config)
        for begin, end in set(zip(left, right)):
            counts[end - begin - 1] += 1
    assert sum(counts.values()) > 3000
    # Cut spans can only be shorter: lengths stay within the recipe's range.
    assert set(counts) <= set(range(1, len(shares) + 1))
    assert _chi_square(counts, shares) < CHI2_CRITICAL_001[len(shares) - 1]
    mean = sum(n * c for n, c in counts.items()) / sum(counts.values())
    expected_mean = sum(n * share for n, share in enumerate(shares, start=1))
    # within 5 standard errors of the mean length over the spans drawn
    variance = sum(n * n * share for n, share in enumerate(shares, start=1)) - expected_mean ** 2
    assert abs(mean - expected_mean) < 5 * (variance / sum(counts.values())) ** 0.5


@pytest.mark.parametrize("recipe", ["wwm", "ngram", "span", "macbert"])
def test_no_recipe_splits_a_word_or_crosses_a_separator(recipe):
    rng = random.Random(11)
    config = _config(recipe, prob=0.3, cap=40, similar={})
    for _ in range(300):
        ids, starts = _random_words(rng, rng.randrange(8, 120))
        units = masking.whole_word_units(starts, use_native=False)
        output, positions, labels = masking.create_masked_lm_predictions(
            ids, starts, rng, config, use_native=False)
        chosen = set(positions)
        assert len(output) == len(ids) and labels == [ids[p] for p in positions]
        assert len(positions) <= config.max_predictions_per_seq
        for begin, end in units:  # a word is chosen whole or not at all
            assert len(chosen & set(range(begin, end))) in (0, end - begin)
        assert not chosen & {p for p, start in enumerate(starts) if start == -1}


def test_span_boundaries_enclose_each_span():
    rng = random.Random(5)
    config = _config("span", prob=0.2, cap=30)
    for _ in range(300):
        ids, starts = _random_words(rng, rng.randrange(8, 100))
        output, positions, labels, left, right = masking.mask_spans(ids, starts, rng, config)
        assert len(left) == len(right) == len(positions)
        chosen = set(positions)
        for position, before, after in zip(positions, left, right):
            assert 0 <= before < position < after < len(ids)
            # the span is every position strictly between its boundaries
            assert set(range(before + 1, after)) <= chosen
            span_output = output[before + 1:after]
            span_ids = ids[before + 1:after]
            # one decision per span: all [MASK], all kept, or all random tokens
            assert (all(t == MASK_ID for t in span_output) or span_output == span_ids
                    or all(t in REPLACEMENTS for t in span_output))


def test_span_decisions_are_80_10_10_per_span():
    config = _config("span", prob=0.15, cap=10000)
    ids, starts = _one_token_words(3000)
    kinds = collections.Counter()
    for seed in range(40):
        output, _, _, left, right = masking.mask_spans(ids, starts, random.Random(seed), config)
        for before, after in set(zip(left, right)):
            span = output[before + 1:after]
            if all(t == MASK_ID for t in span):
                kinds["mask"] += 1
            elif span == ids[before + 1:after]:
                kinds["keep"] += 1
            else:
                kinds["random"] += 1
    total = sum(kinds.values())
    assert total > 2000
    # A random span equal to the original is counted as kept: negligible with 500 ids.
    assert _chi_square({1: kinds["mask"], 2: kinds["keep"], 3: kinds["random"]},
                       [0.8, 0.1, 0.1]) < 13.82  # df = 2, p = 0.001


def _similar_table(ids, starts):
    """Similar words for every 2-token word of the sequence (other 2-token tuples)."""
    table = {}
    for begin, end in masking.whole_word_units(starts, use_native=False):
        if end - begin == 2:
            key = tuple(ids[begin:end])
            table[key] = ((key[0] + 1000, key[1] + 1000), (key[0] + 2000, key[1] + 2000))
    return table


def test_macbert_keeps_token_counts_and_uses_similar_words():
    rng = random.Random(9)
    decisions = collections.Counter()
    for _ in range(400):
        ids, starts = _random_words(rng, rng.randrange(10, 100))
        similar = _similar_table(ids, starts)
        config = _config("macbert", prob=0.2, cap=30, similar=similar)
        units = masking.whole_word_units(starts, use_native=False)
        output, positions, labels, _, _ = masking.mask_spans(ids, starts, rng, config)
        assert len(output) == len(ids)
        assert MASK_ID not in output  # MacBERT never writes [MASK]
        chosen = set(positions)
        for begin, end in units:
            if begin not in chosen:
                assert output[begin:end] == ids[begin:end]
                continue
            key, new = tuple(ids[begin:end]), tuple(output[begin:end])
            if new == key:
                decisions["kept"] += 1
            elif key in similar and new in similar[key]:
                decisions["similar"] += 1
            else:
                assert all(t in REPLACEMENTS for t in new)  # random tokens, same count
                decisions["random"] += 1
    assert decisions["similar"] > 0 and decisions["random"] > 0 and decisions["kept"] > 0


@functools.lru_cache(maxsize=None)
def _encoders(with_token_boundary, with_span_boundaries):
    """(C, Python) encoders."""
    return tuple(InstanceEncoder(256, 80, 30000, with_token_boundary, use_native=c,
                                 with_span_boundaries=with_span_boundaries)
                 for c in (True, False))


@needs_c
@pytest.mark.parametrize("recipe", ["span", "macbert"])
@pytest.mark.parametrize("prob,cap", [(0.15, 20), (1.0, 80), (0.15, 1)])
def test_c_mask_encoder_gives_python_draws_and_bytes(recipe, prob, cap):
    data = random.Random(hash((recipe, prob, cap)) % 1000)
    for index in range(80):
        length = data.choice((3, 4, data.randrange(5, 129), data.randrange(100, 257)))
        ids, starts = _random_words(data, length)
        segment_ids = [0] * length
        similar = _similar_table(ids, starts) if recipe == "macbert" else None
        config = masking.MaskingConfig(prob, cap, MASK_ID, REPLACEMENTS, True, 1, recipe,
                                       similar)
        native_encoder, python_encoder = _encoders(index % 2 == 0, config.span_boundaries)
        fused = masking.make_mask_and_encode(config, native_encoder, use_native=True)
        assert not isinstance(fused, functools.partial)
        python = functools.partial(masking.mask_and_encode, config=config,
                                   encoder=python_encoder)
        units = masking.whole_word_units(starts, use_native=False) if index % 3 else None
        rngs = [random.Random(index), random.Random(index)]
        results = [call(ids, starts, segment_ids, 1, units, rng)
                   for call, rng in zip((fused, python), rngs)]
        assert results[0] == results[1]
        assert rngs[0].getstate() == rngs[1].getstate()


@needs_c
def test_tensorflow_reads_span_boundaries_from_the_c_record():
    tf = pytest.importorskip("tensorflow")
    config = _config("span", prob=0.2, cap=20)
    encoder = InstanceEncoder(128, 20, 30000, use_native=True, with_span_boundaries=True)
    fused = masking.make_mask_and_encode(config, encoder, use_native=True)
    ids, starts = _random_words(random.Random(1), 100)
    record, num_masked, _ = fused(ids, starts, [0] * 100, 0, None, random.Random(3))
    _, positions, _, left, right = masking.mask_spans(ids, starts, random.Random(3), config)
    feature = tf.train.Example.FromString(record).features.feature
    pad = [0] * (20 - num_masked)
    assert list(feature["masked_lm_positions"].int64_list.value) == positions + pad
    assert list(feature["masked_lm_span_left"].int64_list.value) == left + pad
    assert list(feature["masked_lm_span_right"].int64_list.value) == right + pad


def test_macbert_needs_its_table():
    with pytest.raises(ValueError, match="similar_words_file"):
        masking.MaskingConfig(0.15, 20, MASK_ID, REPLACEMENTS, True, 1, "macbert", None)


# ---- through create_pretraining_data ------------------------------------------

SEQ, PRED = 64, 12


@pytest.fixture
def corpus_setup(tmp_path):
    from tests.testutil import data_gen_runs as util
    vocab = util.write_vocab(tmp_path)
    corpus = util.write_corpus(tmp_path / "corpus.txt", util.documents(120, 4))
    similar = tmp_path / "similar.tsv"
    similar.write_text("# words of the test corpus\n北京\t上海\n图书馆\t火车站\n"
                       "天气\t政府\t经济\n不在词表\t北京\n", encoding="utf-8")
    return tmp_path, vocab, corpus, similar


def _generate(tmp_path, vocab, corpus, name, **overrides):
    from data_gen.config import GenerationConfig
    from data_gen.create_pretraining_data import run
    settings = dict(input_file=str(corpus), output_file=str(tmp_path / name),
                    vocab_file=str(vocab), max_seq_length=SEQ, max_predictions_per_seq=PRED,
                    dupe_factor=2, num_workers=1, random_seed=3, progress=False,
                    chunk_bytes=2048, num_output_shards=2)
    settings.update(overrides)
    return run(GenerationConfig(**settings))


@pytest.mark.parametrize("recipe", ["span", "macbert"])
def test_recipe_output_is_identical_for_any_worker_count(corpus_setup, recipe):
    tmp_path, vocab, corpus, similar = corpus_setup
    extra = {"similar_words_file": str(similar)} if recipe == "macbert" else {}
    outputs = []
    for workers in (1, 2):
        account = _generate(tmp_path, vocab, corpus, f"{recipe}{workers}", masking=recipe,
                            num_workers=workers, **extra)
        assert account["masking"] == recipe
        outputs.append([(tmp_path / f"{recipe}{workers}-{i:05d}-of-00002").read_bytes()
                        for i in range(2)])
    assert outputs[0] == outputs[1] and all(len(data) > 1000 for data in outputs[0])
    if recipe == "macbert":  # the table's account: 3 words kept, 1 dropped (not in vocab)
        assert account["similar_words_words_kept"] == 3
        assert account["similar_words_words_dropped_untokenizable"] == 1


def test_span_records_carry_boundaries_google_readers_ignore(corpus_setup):
    import json

    from tests.testutil import data_gen_runs as util
    from data_gen.records import record_schema
    tf = pytest.importorskip("tensorflow")
    tmp_path, vocab, corpus, _ = corpus_setup
    _generate(tmp_path, vocab, corpus, "span", masking="span", num_output_shards=0)
    path = tmp_path / "span"
    meta = json.loads((tmp_path / "span.meta.json").read_text())
    assert meta["masking"] == "span" and meta["has_span_boundaries"] is True
    google = util.read_records(path, SEQ, PRED)  # google-research/bert's spec: extras ignored
    spec = {name: tf.io.FixedLenFeature([length], tf.int64 if dtype == "int64" else tf.float32)
            for name, (dtype, length) in record_schema.feature_lengths(
                SEQ, PRED, with_optional=record_schema.SPAN_BOUNDARIES).items()}
    ours = [tf.io.parse_single_example(r, spec)
            for r in tf.data.TFRecordDataset(str(path)).as_numpy_iterator()]
    assert len(google) == len(ours) > 10
    for record in ours:
        count = int(record["masked_lm_weights"].numpy().sum())
        positions = record["masked_lm_positions"].numpy()[:count]
        left = record["masked_lm_span_left"].numpy()
        right = record["masked_lm_span_right"].numpy()
        assert not left[count:].any() and not right[count:].any()
        assert (left[:count] < positions).all() and (positions < right[:count]).all()


def test_recipe_flag_errors_name_the_flag(corpus_setup):
    from data_gen.config import ConfigError
    tmp_path, vocab, corpus, similar = corpus_setup
    with pytest.raises(ConfigError, match="--masking=macbert needs --similar_words_file"):
        _generate(tmp_path, vocab, corpus, "x", masking="macbert")
    with pytest.raises(ConfigError, match="--similar_words_file is used by --masking=macbert"):
        _generate(tmp_path, vocab, corpus, "x", masking="span", similar_words_file=str(similar))
    with pytest.raises(ConfigError, match="--similar_words_file=.*missing.tsv: file not found"):
        _generate(tmp_path, vocab, corpus, "x", masking="macbert",
                  similar_words_file=str(tmp_path / "missing.tsv"))
    assert not list(tmp_path.glob("x*"))
