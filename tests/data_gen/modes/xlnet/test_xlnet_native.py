"""data_gen.native._xlnet: a --mode=xlnet pass made in C has the same records (bytes),
labels, largest ids, counts and generator state as the pure-Python pass."""
import collections
import random

import pytest

from tests.testutil import data_gen_runs as util
from data_gen.config import GenerationConfig
from data_gen.modes.xlnet.xlnet_instances import XLNetRecipe, pass_documents
from data_gen.modes.xlnet.xlnet_masking import _SPAN_CUMULATIVE
from data_gen.modes.xlnet.xlnet_processing import XLNetChunkProcessor, XLNetEncoder, pass_records

try:
    import data_gen.native._xlnet as NATIVE
except ImportError:
    NATIVE = None
needs_c = pytest.mark.skipif(NATIVE is None, reason="C extension not built")

SPECIAL = {"sep": 4, "cls": 3, "eod": 5}
VOCAB = 3000


def _starts(data, length):
    """Word starts in one of several patterns (-1 and other values inside sentences too)."""
    pattern = data.choice(("random", "random", "ones", "one_unit", "zero_first", "odd"))
    if pattern == "ones":
        return [1] * length
    if pattern == "one_unit":  # a single long word: records it covers cannot be filled
        return [1] + [0] * (length - 1) if length else []
    starts = [data.choice((0, 0, 1)) for _ in range(length)]
    if pattern == "zero_first" and length:
        starts[0] = 0
    elif pattern == "odd":
        starts = [data.choice((0, 1, 2, -1, -7, 1 << 70, -(1 << 70))) for _ in range(length)]
    return starts


def _documents(data, count, max_length=40, vocab=VOCAB):
    """Documents of 1..5 sentences of 0..max_length tokens (empty sentences too)."""
    documents = []
    for _ in range(count):
        document = []
        for _ in range(data.randint(1, 5)):
            length = data.choice((0, 1, data.randint(1, max_length)))
            document.append(([data.randrange(6, vocab) for _ in range(length)],
                             _starts(data, length)))
        documents.append(document)
    return documents


def _recipe(data):
    seq = data.choice((8, 16, 33, 64, 128, data.randint(8, 160)))
    reuse = data.randint(1, seq - 5)
    goal = data.choice((1, 2, 10, 20, data.randint(1, seq), seq))
    beta = data.randint(1, 3)
    return XLNetRecipe(seq, reuse, goal, SPECIAL, data.randint(beta, 8), beta)


def _both(documents, recipe, whole_words, seed, vocab=VOCAB, rng_class=random.Random):
    """(records, labels_1, max_ids, counts as a list, rng state) from C and from Python."""
    encoder = XLNetEncoder(recipe.max_seq_length, vocab)
    results = []
    for module in (NATIVE, None):
        rng, counts = rng_class(seed), collections.Counter()
        made = pass_records(documents, recipe, encoder, whole_words, rng, counts, module)
        results.append((*made, list(counts.items()), rng.getstate()))
    return results


def _native_call(documents, recipe, whole_words, rng, vocab=VOCAB):
    return NATIVE.stream_records(documents, SPECIAL["eod"], whole_words,
                                 recipe.max_seq_length, recipe.reuse_length,
                                 recipe.max_predictions, SPECIAL["sep"], SPECIAL["cls"],
                                 recipe.mask_alpha, recipe.mask_beta, _SPAN_CUMULATIVE, vocab,
                                 rng)


@needs_c
def test_random_passes_give_the_same_bytes_counts_and_draws():
    data = random.Random(20261127)
    made_in_c = skipped = records = 0
    for trial in range(160):
        documents = _documents(data, data.randint(1, 12))
        recipe, whole_words = _recipe(data), data.random() < 0.7
        native, python = _both(documents, recipe, whole_words, trial)
        assert native == python, (trial, recipe.__dict__, whole_words)
        made = _native_call(documents, recipe, whole_words, random.Random(trial))
        made_in_c += made is not NotImplemented
        skipped += dict(python[3]).get("xlnet_records_skipped_few_words", 0)
        records += len(python[0])
    # The trials exercise the C path, kept and dropped records alike.
    assert made_in_c >= 120 and skipped > 20 and records > 500


@needs_c
def test_edge_cases_give_the_same_bytes():
    eod_only = [[([6], [1])]] + [[] for _ in range(30)]  # a stream of end-of-document tokens
    cases = [
        ([[([7, 8, 9], [1, 0, 1])]], XLNetRecipe(8, 2, 2, SPECIAL, 6, 1)),  # shorter than S
        ([[(list(range(6, 300)), [1] + [0] * 293)]], XLNetRecipe(16, 4, 3, SPECIAL, 6, 1)),
        (eod_only, XLNetRecipe(8, 1, 1, SPECIAL, 6, 1)),
        ([[(list(range(6, 70)), [1] * 64)]] * 3, XLNetRecipe(128, 64, 128, SPECIAL, 6, 1)),
        ([[(list(range(6, 200)), [1, 0] * 97)]] * 2, XLNetRecipe(100, 20, 70, SPECIAL, 0, 1)),
        ([[([2999] * 50, [1] * 50)]] * 3, XLNetRecipe(32, 8, 6, SPECIAL, 3, 2)),
    ]
    for documents, recipe in cases:
        for whole_words in (True, False):
            native, python = _both(documents, recipe, whole_words, 5)
            assert native == python, recipe.__dict__
            assert _native_call(documents, recipe, whole_words,
                                random.Random(5)) is not NotImplemented


@needs_c
def test_inputs_left_to_python_are_declined_before_any_draw_and_made_the_same():
    data = random.Random(7)
    documents = _documents(data, 8)
    recipe = XLNetRecipe(32, 8, 6, SPECIAL, 6, 1)
    too_large = [[([VOCAB + 1] + ids, [1] + starts) for ids, starts in doc] for doc in documents]
    float_starts = [[(ids, [float(s) for s in starts]) for ids, starts in doc]
                    for doc in documents]
    empty_first = [[]] + documents  # sentence starts do not begin at 0
    for declined in (too_large, float_starts, empty_first):
        rng = random.Random(1)
        state = rng.getstate()
        assert _native_call(declined, recipe, True, rng) is NotImplemented
        assert rng.getstate() == state
    for declined in (float_starts, empty_first):
        native, python = _both(declined, recipe, True, 3)
        assert native == python
    for bad in (XLNetRecipe(32, 29, 6, SPECIAL, 6, 1), XLNetRecipe(32, 8, 0, SPECIAL, 6, 1)):
        assert _native_call(documents, bad, True, random.Random(1)) is NotImplemented


class _OwnRandom(random.Random):
    def random(self):  # a generator that draws differently: the C path must not be used
        return super().random() ** 2


@needs_c
def test_a_generator_with_its_own_draws_gets_the_python_path():
    documents = _documents(random.Random(11), 10)
    native, python = _both(documents, XLNetRecipe(32, 8, 6, SPECIAL, 6, 1), True, 2,
                           rng_class=_OwnRandom)
    assert native == python
    plain, _ = _both(documents, XLNetRecipe(32, 8, 6, SPECIAL, 6, 1), True, 2)
    assert plain[0] != native[0]


@needs_c
def test_errors_of_the_generator_reach_the_caller():
    class Failing:
        def random(self):
            raise RuntimeError("no more draws")

        def getrandbits(self, bits):
            raise RuntimeError("no more draws")

    documents = _documents(random.Random(3), 10)
    with pytest.raises(RuntimeError, match="no more draws"):
        _native_call(documents, XLNetRecipe(32, 8, 6, SPECIAL, 6, 1), True, Failing())


@needs_c
def test_chunk_processors_with_and_without_c_give_the_same_chunk(tmp_path):
    vocab = util.write_vocab(tmp_path)
    config = GenerationConfig(input_file="unused", output_file=str(tmp_path / "out.tfrecord"),
                              vocab_file=str(vocab), mode="xlnet", max_seq_length=32,
                              max_predictions_per_seq=6, dupe_factor=3, random_seed=9,
                              progress=False)
    documents = util.documents(30, 3)
    native = XLNetChunkProcessor(config, use_native=True).process(4, documents)
    python = XLNetChunkProcessor(config, use_native=False).process(4, documents)
    assert len(python) > 30
    assert native.framed == python.framed and native.ends == python.ends
    assert (native.masked, native.max_ids) == (python.masked, python.max_ids)
    assert native.counts == python.counts


def test_pass_documents_shuffles_the_order_between_passes_only():
    rng = random.Random(4)
    passes = [list(ordered) for ordered in pass_documents(list("abcdef"), 3, rng)]
    expected, order = [list("abcdef")], list(range(6))
    check = random.Random(4)
    for _ in range(2):
        check.shuffle(order)
        expected.append(["abcdef"[index] for index in order])
    assert passes == expected and rng.getstate() == check.getstate()
