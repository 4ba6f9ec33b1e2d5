"""data_gen.native._instances: the C path builds the same pair instances with the same draws."""
import collections
import copy
import gc
import os
import random
import subprocess
import sys

import pytest

from tests.testutil import data_gen_runs as util
from conftest import REPO_ROOT
from data_gen.modes.mlm import instances as inst

try:
    import data_gen.native._instances as NATIVE
except ImportError:
    NATIVE = None
needs_c = pytest.mark.skipif(NATIVE is None, reason="C extension not built")

CLS, SEP = 2, 3
SPECIAL = inst.SpecialIds(CLS, SEP)


def _starts(data, length):
    """Unit starts in one of several patterns (0 = continues the unit before)."""
    pattern = data.choice(("random", "random", "ones", "one_unit", "zero_first", "odd"))
    if pattern == "ones":
        return [1] * length
    if pattern == "one_unit":  # no boundary inside: hard cuts and splits anywhere
        return [1] + [0] * (length - 1)
    starts = [data.choice((0, 0, 1)) for _ in range(length)]
    if pattern == "zero_first":
        starts[0] = 0
    elif pattern == "odd":  # values that are neither 0 nor 1 are copied, never compared equal
        starts = [data.choice((0, 1, 2, -1, 1 << 70)) for _ in range(length)]
    return starts


def _chunk(data, num_documents, one_token=False):
    """Documents of 1..12 sentences of 1..300 tokens (distinct ids, some > 256)."""
    next_id = data.choice((10, 1000))
    documents = []
    for _ in range(num_documents):
        document = []
        for _ in range(data.choice((1, 1, 2, data.randint(1, 12)))):
            length = 1 if one_token else data.choice(
                (1, 2, data.randint(1, 20), data.randint(1, 60), data.randint(1, 300)))
            document.append((list(range(next_id, next_id + length)), _starts(data, length)))
            next_id += length
        documents.append(document)
    return documents


def _run(documents, use_native, seed, *args, **kwargs):
    """(instances or the error, rng state, account) of one path."""
    rng = random.Random(seed)
    account = kwargs.pop("account", None)
    account = collections.Counter(seen=1) if account is None else copy.copy(account)
    try:
        built = inst.create_all_pair_instances(documents, args[0], args[1], args[2], SPECIAL,
                                               rng, args[3], account, use_native=use_native,
                                               **kwargs)
    except Exception as error:  # noqa: BLE001 - the error itself is compared
        built = (type(error), str(error))
    return built, rng.getstate(), account


def _assert_same(documents, seed, *args, **kwargs):
    """C and Python agree; returns the C result."""
    snapshot = repr(documents)
    native = _run(documents, True, seed, *args, **kwargs)
    python = _run(documents, False, seed, *args, **kwargs)
    assert native[0] == python[0]
    assert native[1] == python[1]  # the same draws
    assert native[2] == python[2]
    assert list(native[2]) == list(python[2])  # keys in the same order
    assert repr(documents) == snapshot  # inputs left as they are
    return native


@needs_c
@pytest.mark.parametrize("task", ["sop", "nsp"])
@pytest.mark.parametrize("dupe_factor", [1, 5])
@pytest.mark.parametrize("short_seq_prob", [0.0, 0.1, 1.0])
def test_c_and_python_build_the_same_instances_with_the_same_draws(task, dupe_factor,
                                                                   short_seq_prob):
    data = random.Random(hash((task, dupe_factor, short_seq_prob)) % 10007)
    built = collections.Counter()
    for index in range(40):
        max_seq_length = (16, 32, 128, 512)[index % 4]
        documents = _chunk(data, data.choice((1, 2, 3, 8, 20)))
        result, _, account = _assert_same(documents, data.randrange(1 << 30), dupe_factor,
                                          max_seq_length, short_seq_prob, task)
        assert isinstance(result, list)
        built["instances"] += len(result)
        built["labels_1"] += sum(label for *_, label in result)
        built["too_short"] += account["documents_too_short_for_pair"]
        for ids, starts, segment_ids, label in result:
            assert len(ids) == len(starts) == len(segment_ids) <= max_seq_length
            assert all(type(value) is int for value in ids + starts + segment_ids)
            assert type(label) is int and label in (0, 1)
    assert built["instances"] > 50 and built["labels_1"] > 0


@needs_c
@pytest.mark.parametrize("size", [0, 1, 2, 3, 10, 1000, 70000])
def test_c_shuffle_equals_random_shuffle(size):
    for seed in (0, 1, 12345):
        expected, got = list(range(size)), list(range(size))
        rng_python, rng_c = random.Random(seed), random.Random(seed)
        rng_python.shuffle(expected)
        NATIVE.shuffle(got, rng_c)
        assert got == expected
        assert rng_c.getstate() == rng_python.getstate()
    # The dispatcher: C for a list and a plain Random, Python otherwise.
    class Custom(random.Random):
        def _randbelow(self, n):
            return 0

    for rng_factory in (random.Random, Custom):
        for use_native in (None, False):
            items = list(range(50))
            reference = list(range(50))
            rng_factory(3).shuffle(reference)
            inst.shuffle(items, rng_factory(3), use_native=use_native)
            assert items == reference


@needs_c
def test_c_shuffle_refuses_non_lists():
    with pytest.raises(TypeError):
        NATIVE.shuffle((1, 2, 3), random.Random(0))


@needs_c
@pytest.mark.parametrize("task", ["sop", "nsp"])
def test_edge_chunks_agree(task):
    data = random.Random(5)
    one_document = _chunk(data, 1)
    one_sentence_documents = [[sentence] for document in _chunk(data, 30) for sentence in document]
    one_token = _chunk(data, 10, one_token=True)
    long_sentences = [[(list(range(i, i + 300)), _starts(data, 300))] for i in range(0, 1200, 300)]
    chunks = [one_document, one_sentence_documents, one_token, long_sentences, [],
              one_token + one_document, [[([7], [0])], [([8], [0])]]]
    for documents in chunks:
        for max_seq_length in (4, 5, 16, 128):
            for short_seq_prob in (0.0, 0.5, 1.0):
                for dupe_factor in (0, 1, 3):
                    _assert_same(documents, 11, dupe_factor, max_seq_length, short_seq_prob, task)
    _, _, account = _assert_same(one_token + [[([7], [1])]], 3, 2, 64, 0.1, task)
    if task == "sop":
        assert account["documents_too_short_for_pair"] > 2
    result, _, account = _assert_same([[([7], [1])]], 3, 4, 64, 0.1, task)
    assert result == [] and account["documents_too_short_for_pair"] == 4
    assert account["seen"] == 1
    assert set(account) == {"seen", "documents_too_short_for_pair"}
    result, _, _ = _assert_same(one_document, 3, 5, 64, 0.1, task)
    assert result
    if task == "nsp":  # no other document: every pair is an actual next
        assert all(instance[3] == 0 for instance in result)


def _randrange_error(start, stop):
    """(ValueError, message) of this Python's random.randrange(start, stop) on an empty range:
    3.11 says "empty range for randrange() (2, 2, 0)", 3.12 "empty range in randrange(2, 2)"."""
    with pytest.raises(ValueError) as raised:
        random.Random(0).randrange(start, stop)
    return (ValueError, str(raised.value))


@needs_c
@pytest.mark.parametrize("task", ["sop", "nsp"])
def test_errors_are_raised_after_the_same_draws_and_counts(task):
    documents = [[([5, 6, 7], [1, 0, 1])], [([8], [0])], [([9, 10], [1, 1])]]
    # randint(2, 1): max_seq_length 4 leaves one token, short_seq_prob draws a target.
    native = _assert_same(documents, 1, 3, 4, 1.0, task)
    assert native[0] == _randrange_error(2, 2)
    # NSP picks an empty document as the random next: randint(0, -1).
    with_empty = documents + [[]] * 3
    for seed in range(20):
        native = _assert_same(with_empty, seed, 3, 32, 0.1, task)
        if task == "nsp":
            assert native[0] == _randrange_error(0, 0)
        else:
            assert isinstance(native[0], list)
    # account[key] += 1 raises as Python's does on a dict without the key.
    # One document (no other for NSP): an instance, then a one-token chunk.
    native = _assert_same([[([5, 6, 7, 8], [1, 1, 1, 1]), ([9], [1])]], 2, 1, 7, 0.0, task,
                          account={})
    assert native[0] == (KeyError, "'documents_too_short_for_pair'")
    assert native[1] != random.Random(2).getstate()  # after the first instance's draws
    # The collector is left as it was, also after an error.
    for enabled in (True, False):
        gc.enable() if enabled else gc.disable()
        try:
            _assert_same(with_empty, 0, 3, 32, 0.1, task)
            assert gc.isenabled() is enabled
        finally:
            gc.enable()


class OverridingRandom(random.Random):
    def random(self):
        return 0.25


class FailingRandom(random.Random):
    """Random whose getrandbits fails on its third call."""

    def __init__(self, seed):
        super().__init__(seed)
        self.calls = 0

    def getrandbits(self, k):
        self.calls += 1
        if self.calls == 3:
            raise KeyError("boom")
        return super().getrandbits(k)


@needs_c
def test_inputs_left_to_python_give_python_results(monkeypatch):
    data = random.Random(9)
    documents = _chunk(data, 6)
    ids, starts = documents[0][0]
    odd_chunks = [
        [[(tuple(ids), starts)]] + documents,         # tuple ids
        [[(ids[:-1] + [1.5], starts)]] + documents,   # a float id
        [[(ids, starts[:-1] + [True])]] + documents,  # a bool start
        [[(ids, starts + [1])]] + documents,          # lengths differ
        [[[ids, starts, ids]]] + documents,           # not a pair
        [{0: documents[0][0]}] + documents,           # not a list
    ]
    for documents_given in odd_chunks:
        rng = random.Random(1)
        state = rng.getstate()
        assert NATIVE.build_pair_instances(documents_given, 1, 32, 0.1, CLS, SEP, rng, True,
                                           collections.Counter()) is NotImplemented
        assert rng.getstate() == state  # declined before any draw
        _assert_same(documents_given, 4, 2, 32, 0.1, "nsp")
    as_tuples = tuple(tuple(document) for document in documents)  # taken by the C path
    assert NATIVE.build_pair_instances(as_tuples, 1, 32, 0.1, CLS, SEP, random.Random(1), True,
                                       collections.Counter()) is not NotImplemented
    _assert_same(as_tuples, 4, 2, 32, 0.1, "nsp")
    for odd_arguments in [(2, 32, 0.1, "mlm"), (2.0, 32, 0.1, "sop"), (2, 32, 1, "sop"),
                          (2, 32, True, "nsp"), (2, 3, 0.1, "sop"), (2, 1 << 40, 0.1, "sop")]:
        _assert_same(documents, 4, *odd_arguments)
    _assert_same(documents, 4, 2, 32, 0.1, "sop", account=collections.defaultdict(int))
    # Subclasses of Random that override a draw run the Python path.
    for rng_class in (OverridingRandom, FailingRandom, random.SystemRandom):
        assert not inst._plain_random(rng_class(1))
    assert inst._plain_random(type("Plain", (random.Random,), {})(1))
    shadowed = random.Random(1)
    shadowed.random = lambda: 0.5
    assert not inst._plain_random(shadowed)

    def no_c_call(*args):
        raise AssertionError("the C path must not run")

    monkeypatch.setattr(NATIVE, "build_pair_instances", no_c_call)
    account = collections.Counter()
    expected = inst.create_all_pair_instances(documents, 2, 32, 0.1, SPECIAL, random.Random(3),
                                              "nsp", account, use_native=False)
    for rng in (OverridingRandom(3), FailingRandom(3)):
        try:
            inst.create_all_pair_instances(documents, 2, 32, 0.1, SPECIAL, rng, "nsp",
                                           collections.Counter())
        except KeyError:
            assert isinstance(rng, FailingRandom) and rng.calls == 3
    monkeypatch.setenv("ZH_PRETRAIN_PURE_PYTHON", "1")
    assert inst.create_all_pair_instances(documents, 2, 32, 0.1, SPECIAL, random.Random(3),
                                          "nsp", collections.Counter()) == expected


def test_use_native_true_without_the_module_raises(monkeypatch):
    monkeypatch.setitem(sys.modules, "data_gen.native._instances", None)
    with pytest.raises(ImportError, match="native._instances is not built"):
        inst.create_all_pair_instances([], 1, 32, 0.1, SPECIAL, random.Random(0), "sop",
                                       collections.Counter(), use_native=True)
    # None falls back to Python; the result is the create_pair_instances loop.
    data = random.Random(2)
    documents = _chunk(data, 5)
    rng, account = random.Random(1), collections.Counter()
    expected = []
    for _ in range(2):
        for index in range(len(documents)):
            expected += inst.create_pair_instances(documents, index, 32, 0.1, SPECIAL, rng,
                                                   "sop", account)
    rng_all, account_all = random.Random(1), collections.Counter()
    assert inst.create_all_pair_instances(documents, 2, 32, 0.1, SPECIAL, rng_all, "sop",
                                          account_all) == expected
    assert rng_all.getstate() == rng.getstate() and account_all == account


@needs_c
def test_no_leaks():
    data = random.Random(0)
    documents = _chunk(data, 12)
    documents[0][0][0][0] = 1 << 40  # an id that is not a cached int
    with_empty = documents + [[]]
    rng = random.Random(1)

    def run(times):
        for i in range(times):
            task = ("sop", "nsp")[i % 2]
            NATIVE.build_pair_instances(documents, 2, (16, 128, 512)[i % 3], 0.3, CLS, SEP, rng,
                                        task == "nsp", collections.Counter())
            if i % 10 == 0:
                with pytest.raises(ValueError):
                    NATIVE.build_pair_instances(with_empty, 50, 32, 0.1, CLS, SEP, rng, True,
                                                collections.Counter())
                with pytest.raises(KeyError):
                    NATIVE.build_pair_instances([[([7], [1])]], 1, 32, 0.1, CLS, SEP, rng,
                                                False, {})
                with pytest.raises(KeyError):
                    NATIVE.build_pair_instances(documents, 1, 32, 0.1, CLS, SEP,
                                                FailingRandom(i), True, collections.Counter())

    run(200)
    watched = [documents[0][0][0][0], rng, CLS, SEP] + [document[0][0] for document in documents]
    gc.collect()  # CLS and SEP are small ints other garbage may hold: collect it first
    references = [sys.getrefcount(value) for value in watched]
    before = util.resident_bytes()
    run(5000)
    gc.collect()
    assert util.resident_bytes() - before < 3 << 20
    assert [sys.getrefcount(value) for value in watched] == references


def _long_sentence(index):
    return "".join(util.SENTENCES[(index + k) % len(util.SENTENCES)] for k in range(5))


@pytest.mark.parametrize("mode", ["bert", "albert"])
def test_cli_output_is_the_same_with_and_without_the_c_paths(tmp_path, mode):
    """Byte-identical TFRecords with ZH_PRETRAIN_PURE_PYTHON=1 and without."""
    vocab = util.write_vocab(tmp_path)
    data = random.Random(6)
    documents = util.documents(40, 1) + util.documents(30, 2, offset=3)
    documents += util.documents(10, 20, offset=5)
    documents += [[_long_sentence(i)] + util.documents(1, 3, offset=i)[0] for i in range(10)]
    data.shuffle(documents)
    corpus = util.write_corpus(tmp_path / "corpus.txt", documents)
    outputs = []
    for pure in ("1", ""):
        out = tmp_path / f"out{pure}.tfrecord"
        env = dict(os.environ, ZH_PRETRAIN_PURE_PYTHON=pure)
        subprocess.run([sys.executable, "-m", "data_gen.create_pretraining_data",
                        f"--input_file={corpus}", f"--output_file={out}",
                        f"--vocab_file={vocab}", f"--mode={mode}", "--max_seq_length=32",
                        "--max_predictions_per_seq=5", "--dupe_factor=3", "--short_seq_prob=0.3",
                        "--num_workers=1", "--chunk_bytes=6000", "--noprogress"],
                       check=True, cwd=REPO_ROOT, env=env, capture_output=True)
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] and len(outputs[0]) > 10000
