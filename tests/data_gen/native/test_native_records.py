"""data_gen.native._records: the C path gives the same draws, values and bytes as Python."""
import functools
import os
import random
import subprocess
import sys

import pytest

from tests.testutil import data_gen_runs as util
from conftest import REPO_ROOT

from data_gen.records import example_proto
from data_gen.modes.mlm import masking
from data_gen.records.example_proto import InstanceEncoder

try:
    NATIVE = example_proto.records_module(True)
except ImportError:
    NATIVE = None
needs_c = pytest.mark.skipif(NATIVE is None, reason="C extension not built")

MAX_LEN, MAX_PRED = 512, 80
REPLACEMENTS = list(range(100, 1100)) + [16383, 16384, 70000, 1 << 35]


def _config(prob, cap, ngram, whole_word, replacements=REPLACEMENTS):
    return masking.MaskingConfig(prob, cap, 4, replacements, whole_word, ngram)


def _id(rng):
    """Ids with 1- to 6-byte varints."""
    return rng.choice((rng.randrange(5, 128), rng.randrange(128, 1 << 14),
                       rng.randrange(1 << 14, 1 << 21), rng.randrange(1 << 35, 1 << 36)))


def _instance(rng, length):
    """(ids, starts, segment_ids, label): [CLS] A [SEP] (B [SEP]), starts 0/1 at random."""
    starts = [-1] + [rng.choice((0, 1)) for _ in range(length - 2)] + [-1]
    middle = rng.randrange(1, length - 1) if length > 4 and rng.random() < 0.7 else None
    if middle is not None:
        starts[middle] = -1
    ids = [2 if start < 0 else _id(rng) for start in starts]
    cut = middle + 1 if middle is not None else length
    return ids, starts, [0] * cut + [1] * (length - cut), rng.choice((0, 1))


@functools.lru_cache(maxsize=None)
def _encoders(with_boundary):
    """(C, Python) encoders."""
    return (InstanceEncoder(MAX_LEN, MAX_PRED, 30000, with_boundary, use_native=True),
            InstanceEncoder(MAX_LEN, MAX_PRED, 30000, with_boundary, use_native=False))


def _both(call, seed):
    """call(rng, use_native) for C then Python with equal generators -> (results, states)."""
    results, states = [], []
    for use_native in (True, False):
        rng = random.Random(seed)
        try:
            results.append(call(rng, use_native))
        except Exception as error:  # noqa: BLE001 - the exception itself is compared
            results.append((type(error), str(error)))
        states.append(rng.getstate())
    return results, states


@needs_c
@pytest.mark.parametrize("whole_word", [True, False])
@pytest.mark.parametrize("ngram", [1, 3])
@pytest.mark.parametrize("prob", [0.15, 1.0])
@pytest.mark.parametrize("cap", [1, 20, 80])
def test_c_and_python_agree_on_units_draws_and_bytes(whole_word, ngram, prob, cap):
    data = random.Random(hash((whole_word, ngram, prob, cap)) % 1000)
    config = _config(prob, cap, ngram, whole_word)
    for index in range(60):
        length = data.choice((3, 4, 5, data.randrange(3, 513), data.randrange(100, 513)))
        ids, starts, segment_ids, label = _instance(data, length)
        units = masking.whole_word_units(starts, whole_word, use_native=True)
        assert units == masking.whole_word_units(starts, whole_word, use_native=False)
        boundary = masking.token_boundary(starts, use_native=True)
        assert boundary == masking.token_boundary(starts, use_native=False)
        for given in (None, units):
            results, states = _both(lambda rng, c: masking.create_masked_lm_predictions(
                ids, starts, rng, config, given, use_native=c), index)
            assert results[0] == results[1] and states[0] == states[1]
        output_ids, positions, labels = results[0]
        assert len(positions) <= cap and labels == [ids[p] for p in positions]
        for with_boundary in (True, False):
            native_encoder, python_encoder = _encoders(with_boundary)
            args = (output_ids, segment_ids, positions, labels, label, boundary)
            assert native_encoder.encode(*args) == python_encoder.encode(*args)
            fused = masking.make_mask_and_encode(config, native_encoder, use_native=True)
            assert not isinstance(fused, functools.partial)
            results, states = _both(lambda rng, c: (fused if c else functools.partial(
                masking.mask_and_encode, config=config, encoder=python_encoder))(
                    ids, starts, segment_ids, label, units if index % 2 else None, rng), index)
            assert results[0] == results[1] and states[0] == states[1]
            assert results[0][1] == len(positions)
            assert results[0][2] == max(max(output_ids), max(labels, default=0))


@needs_c
def test_tensorflow_reads_the_fused_record():
    tf = pytest.importorskip("tensorflow")
    data = random.Random(3)
    config = _config(0.15, 20, 3, True)
    fused = masking.make_mask_and_encode(config, _encoders(True)[0], use_native=True)
    for _ in range(20):
        ids, starts, segment_ids, label = _instance(data, data.randrange(3, 513))
        seed = data.randrange(1000)
        record, num_masked, max_id = fused(ids, starts, segment_ids, label, None,
                                           random.Random(seed))
        output_ids, positions, labels = masking.create_masked_lm_predictions(
            ids, starts, random.Random(seed), config, use_native=False)
        feature = tf.train.Example.FromString(record).features.feature

        def values(name, kind="int64_list"):
            return list(getattr(feature[name], kind).value)

        pad_len, pad_pred = MAX_LEN - len(ids), MAX_PRED - num_masked
        assert values("input_ids") == output_ids + [0] * pad_len
        assert values("input_mask") == [1] * len(ids) + [0] * pad_len
        assert values("segment_ids") == segment_ids + [0] * pad_len
        assert values("token_boundary") == [0 if s == 0 else 1 for s in starts] + [0] * pad_len
        assert values("masked_lm_positions") == positions + [0] * pad_pred
        assert values("masked_lm_ids") == labels + [0] * pad_pred
        assert values("masked_lm_weights", "float_list") == [1.0] * num_masked + [0.0] * pad_pred
        assert values("next_sentence_labels") == [label]
        assert max_id == max(output_ids + labels)


@needs_c
def test_encode_errors_and_inputs_left_to_python_match():
    native_encoder, python_encoder = InstanceEncoder(4, 2, 300, True, use_native=True), \
        InstanceEncoder(4, 2, 300, True, use_native=False)
    cases = [
        ([1] * 5, [0] * 5, [1], [7], 0, [1] * 5),            # too long
        ([1, 2], [0, 0], [0, 1, 1], [7, 7, 7], 0, [1, 1]),   # too many predictions
        ([1, -1, -299, 2], [0] * 4, [1], [7], 0, [1] * 4),   # negative: Python's table lookup
        ([1, -301, 2], [0] * 3, [1], [7], 0, [1] * 3),       # below the table: 10-byte varint
        ((1, 1 << 70), (0, 0), (1,), (7,), -1, (1, 1)),      # beyond int64; tuples
        ([1, 2.0], [0, 0], [1], [7], 0, [1, 1]),             # TypeError from Python
        ([1, True], [0, 0, 0, 0, 0, 0], [1], [7, 8, 9], 1, None),  # boundary None
        ([1, 2], [0, 0], [1], [7], 1, range(2)),              # not a list/tuple
    ]
    for args in cases:
        results, _ = _both(lambda rng, c: (native_encoder if c else python_encoder).encode(
            *args), 0)
        assert results[0] == results[1], args
    assert native_encoder.encode([1, 2], [0, 0, 0, 0, 0, 0], [1], [7, 8, 9], 300, [1]) == \
        python_encoder.encode([1, 2], [0, 0, 0, 0, 0, 0], [1], [7, 8, 9], 300, [1])


class FailingRandom(random.Random):
    """Raises from the `fail_at`-th call of random()."""

    def __new__(cls, seed, fail_at):  # Python 3.10's Random.__new__ takes the seed only
        del fail_at
        return super().__new__(cls, seed)

    def __init__(self, seed, fail_at):
        super().__init__(seed)
        self.calls, self.fail_at = 0, fail_at

    def random(self):
        self.calls += 1
        if self.calls == self.fail_at:
            raise KeyError(f"call {self.calls}")
        return super().random()


@needs_c
@pytest.mark.parametrize("ngram", [1, 3])
def test_errors_propagate_after_the_same_draws(ngram):
    data = random.Random(ngram)
    config = _config(0.15, 20, ngram, True)
    encoders = _encoders(True)
    fused = masking.make_mask_and_encode(config, encoders[0], use_native=True)
    python = functools.partial(masking.mask_and_encode, config=config, encoder=encoders[1])
    ids, starts, segment_ids, label = _instance(data, 200)
    for fail_at in (1, 2, 5, 17, 30, 10 ** 6):
        outcomes = []
        for call in (fused, python,
                     lambda *a: masking.create_masked_lm_predictions(*a[:2], a[-1], config),
                     lambda *a: masking.create_masked_lm_predictions(*a[:2], a[-1], config,
                                                                     use_native=False)):
            rng = FailingRandom(5, fail_at)
            try:
                outcome = call(ids, starts, segment_ids, label, None, rng)
            except KeyError as error:
                outcome = repr(error)
            outcomes.append((outcome, rng.calls, rng.getstate()))
        assert outcomes[0] == outcomes[1] and outcomes[2] == outcomes[3]
    # Oversize instance (after the draws), no replacement ids, malformed units.
    short = InstanceEncoder(100, 3, 300, True)
    cases = [(config, short, None, ValueError),
             (_config(1.0, 80, ngram, True, []), encoders[0], None, IndexError),
             (config, encoders[0], [(1, 3), (3, 500)], None),
             (config, encoders[0], [(1, 3), (5, 4)], IndexError if ngram > 1 else None),
             (config, encoders[0], [(1, 3, 4)], ValueError)]
    for case_config, encoder, units, error in cases:
        fused = masking.make_mask_and_encode(case_config, encoder, use_native=True)
        python = functools.partial(masking.mask_and_encode, config=case_config, encoder=encoder)
        results, states = _both(lambda rng, c: (fused if c else python)(
            ids, starts, segment_ids, label, units, rng), 9)
        assert results[0] == results[1] and states[0] == states[1]
        assert results[0][0] is error if error else isinstance(results[0][0], bytes)


@needs_c
def test_inputs_left_to_python_give_python_results():
    config = _config(0.5, 20, 3, True)
    encoder = _encoders(False)[1]
    fused = masking.make_mask_and_encode(config, encoder, use_native=True)
    python = functools.partial(masking.mask_and_encode, config=config, encoder=encoder)
    ids, starts, segment_ids, label = _instance(random.Random(1), 40)
    for args in [(ids[:5] + [-7] + ids[6:], starts, segment_ids, label),
                 (tuple(ids), tuple(starts), segment_ids, True),
                 (ids, [float(s) for s in starts], segment_ids, label),
                 ([2, 3], [-1, -1], [0, 0], 0)]:
        results, states = _both(lambda rng, c: (fused if c else python)(*args, None, rng), 2)
        assert results[0] == results[1] and states[0] == states[1]
    for odd in (_config(0.5, 20, 3, True, [100, -5]), _config(0.5, 20, 3, True, [100, True])):
        assert isinstance(masking.make_mask_and_encode(odd, encoder, use_native=True),
                          functools.partial)  # replacement ids the C path does not take
    assert masking.whole_word_units([-1, 0, 1, 0.0, -1], use_native=True) == [(2, 4)]
    assert masking.token_boundary([-1, 0, 0.0, 1], use_native=True) == [1, 0, 0, 1]


def test_pure_python_switch():
    code = ("from data_gen.records import example_proto\n"
            "from data_gen.modes.mlm import masking\n"
            "assert example_proto.records_module() is None\n"
            "config = masking.MaskingConfig(0.15, 20, 4, [100])\n"
            "encoder = example_proto.InstanceEncoder(8, 2, 200)\n"
            "assert encoder._native is None\n"
            "python = masking.make_mask_and_encode(config, encoder)\n"
            "assert python.func is masking.mask_and_encode\n")
    env = dict(os.environ, ZH_PRETRAIN_PURE_PYTHON="1")
    subprocess.run([sys.executable, "-c", code], check=True, env=env,
                   cwd=REPO_ROOT)


@needs_c
def test_no_leaks():
    data = random.Random(0)
    config = masking.MaskingConfig(0.15, 20, 1 << 40, REPLACEMENTS, True, 3)  # uncached ints
    encoder = _encoders(True)[0]
    fused = masking.make_mask_and_encode(config, encoder, use_native=True)
    short = masking.make_mask_and_encode(config, InstanceEncoder(50, 20, 300), use_native=True)
    ids, starts, segment_ids, label = _instance(data, 128)
    units = masking.whole_word_units(starts)
    bad = ids[:3] + [-1] + ids[4:]

    rng = random.Random(1)

    def run(times):
        for i in range(times):
            fused(ids, starts, segment_ids, label, units if i % 2 else None, rng)
            output_ids, positions, labels = masking.create_masked_lm_predictions(
                ids, starts, rng, config, units if i % 2 else None)
            encoder.encode(output_ids, segment_ids, positions, labels, label,
                           masking.token_boundary(starts))
            masking.whole_word_units(starts, bool(i % 2))
            if i % 100 == 0:  # errors and fallbacks
                with pytest.raises(ValueError):
                    short(ids, starts, segment_ids, label, units, rng)
                with pytest.raises(KeyError):
                    fused(ids, starts, segment_ids, label, units, FailingRandom(1, 3))
                fused(bad, starts, segment_ids, label, units, rng)

    run(2000)
    watched = [value for value in ids if value > 256] + [config.mask_id, rng] + REPLACEMENTS[-3:]
    references = [sys.getrefcount(value) for value in watched]
    before = util.resident_bytes()
    run(20000)
    assert util.resident_bytes() - before < 3 << 20
    assert [sys.getrefcount(value) for value in watched] == references


@needs_c
@pytest.mark.parametrize("whole_word", [True, False])
def test_c_and_python_write_the_same_unmasked_records(whole_word):
    """data_gen --train_time_masking's encoder (example_proto.WordIdsEncoder): the same bytes,
    word_ids included, for instances of every length and ids of 1- to 6-byte varints; the
    same error for a too-long instance; inputs the C path leaves to Python give Python's."""
    native_encoder = example_proto.WordIdsEncoder(MAX_LEN, 30000, use_native=True)
    python_encoder = example_proto.WordIdsEncoder(MAX_LEN, 30000, use_native=False)
    rng = random.Random(5)
    for length in list(range(2, 40)) + [128, 511, 512]:
        ids, starts, segments, label = _instance(rng, length)
        assert (native_encoder.encode(ids, segments, starts, label, whole_word)
                == python_encoder.encode(ids, segments, starts, label, whole_word))
    too_long = ([5] * 513, [0] * 513, [1] * 513, 0, whole_word)
    left_to_python = ([5, -7, 6], [0, 0, 0], [-1, 1, -1], 1, whole_word)
    as_range = (range(5, 8), [0, 0, 0], [-1, 1, -1], 1, whole_word)
    for args in (too_long, left_to_python, as_range):
        results, _ = _both(lambda rng, c: (native_encoder if c else python_encoder).encode(
            *args), 0)
        assert results[0] == results[1], args[:2]
    assert results[0].startswith(b"\n")  # a record, not an error
