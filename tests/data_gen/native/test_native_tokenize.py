"""data_gen.native._tokenize: the C tokenize_sentence gives the Python path's ids and starts."""
import functools
import gc
import itertools
import os
import random
import subprocess
import sys
import weakref

import pytest

from tests.testutil import data_gen_runs as util
from conftest import REPO_ROOT, SHARED_DATA
from data_gen import modes
from data_gen.config import GenerationConfig

try:
    from data_gen.native import _tokenize as _native_tokenize
except ImportError:
    _native_tokenize = None

needs_c = pytest.mark.skipif(_native_tokenize is None, reason="C extension not built")

# Pieces of synthetic text: every kind of character the normalizer and splitter treat apart.
PIECES = [
    *util.SENTENCES,
    "Café", "naïve", "ÅNGSTRÖM", "İstanbul", "Straße", "ﬁne", "ΆΈΉ", "\u0301", "e\u0301",
    "한국어", "Ｈｅｌｌｏ", "ＡＢＣ１２３ｘｙｚ", "！？（）", "hello", "playing", "unwanted",
    "2019", "1,2.3", "qzxv", "the", "a" * 250, "x" * 201, "中" * 250, "ab" * 120,
    "。，、；：？！“”‘’（）《》【】…—·", "-_()[]{}<>@#$%^&*~`|\\/", "¿¡«»§¶†‡‰′″",
    "©®™°±×÷€£¥₩", "\x01\x07\x1b\x7f\x85", "\u200b\u200d\u2028\u2029\ufeff\u00ad",
    "\x00", "\ufffd", "\t", "\n", "\r\n", "\u3000", "\u00a0", "\u2003",
    "😀", "👍🏽", "🇨🇳", "👩\u200d💻", "\U00020000\U0002a6d6", "\U0002f800", "\U0002b740",
    "\ud800", "Ⅻⅰ", "①②", "ｶﾀｶﾅ", "カタカナ", "ㄅㄆ", "\uf900\ufa0e", "\u3400\u4dbf",
]
SEPARATORS = ["", "", " ", "  ", "\t", "\u3000"]
EDGE_CASES = ["", " ", "  \t\u3000\u00a0 ", "\x00", "\x00\ufffd\x07", "\u0301", "中", "a",
              "😀", "\U00020000", "Café中国", " 中 国 "]
EXTRA_VOCAB = ["café", "cafe", "Café", "##é", "naive", "##ï", "ａ", "##ｂ", "Ｈ", "##ｅ", "１",
               "i", "##stanbul", "😀", "\U00020000", "ß", "。", "，", "（", "！", "!", "(",
               "##2", "##0", "##9", "##1", "ab", "##ab", "中", "韩", "한", "ᄒ", "##ᅡ"]
CONFIGS = [dict(do_lower_case=lower, full_width_to_half=folded, do_whole_word_mask=whole)
           for lower, folded, whole in itertools.product((True, False), repeat=3)]



def make_processor(config, use_native=None):
    """The chunk processor of config's mode (data_gen.modes)."""
    return modes.get(config.mode).make_processor(config, use_native)

def synthetic_sentences(count, seed=0):
    rng = random.Random(seed)
    sentences = list(EDGE_CASES) + PIECES
    for _ in range(count):
        parts = rng.choices(PIECES, k=rng.randint(1, 10))
        sentences.append("".join(part + rng.choice(SEPARATORS) for part in parts))
        random_cjk = "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(rng.randint(1, 30)))
        sentences.append(random_cjk + rng.choice(PIECES))
    return sentences


def make_config(vocab_file, **settings):
    return GenerationConfig(input_file="unused", output_file="unused",
                            vocab_file=str(vocab_file), **settings)


def processors(config):
    return make_processor(config, use_native=False), make_processor(config, use_native=True)


@pytest.fixture(scope="module")
def small_vocab(tmp_path_factory):
    return util.write_vocab(tmp_path_factory.mktemp("vocab"), extra=EXTRA_VOCAB)


def assert_same(python, native, sentences):
    for sentence in sentences:
        expected = python.tokenize_sentence(sentence)
        got = native.tokenize_sentence(sentence)
        assert type(got) is tuple and type(got[0]) is list and type(got[1]) is list
        assert got == expected, repr(sentence)
        # The Python path over the caches the C path filled agrees too.
        assert native._tokenize_sentence_python(sentence) == expected, repr(sentence)


@needs_c
@pytest.mark.parametrize("settings", CONFIGS, ids=lambda s: "-".join(
    f"{key}={int(value)}" for key, value in s.items()))
def test_synthetic_text_matches_python(small_vocab, settings):
    python, native = processors(make_config(small_vocab, **settings))
    assert native._native is not None and python._native is None
    assert_same(python, native, synthetic_sentences(400, seed=len(str(settings))))


@needs_c
@pytest.mark.parametrize("settings", [CONFIGS[0], CONFIGS[3], CONFIGS[6]])
def test_synthetic_text_matches_python_with_google_vocab(settings):
    vocab = SHARED_DATA / "vocab" / "bert_chinese_vocab.txt"
    if not vocab.exists():
        pytest.skip(f"{vocab} not present (needs the shared data set)")
    python, native = processors(make_config(vocab, **settings))
    assert_same(python, native, synthetic_sentences(300, seed=5))


@needs_c
@pytest.mark.parametrize("settings", [CONFIGS[0], CONFIGS[5]])
def test_clue_sample_matches_python(settings):
    corpus = SHARED_DATA / "corpus" / "clue_small_sample.txt"
    vocab = SHARED_DATA / "vocab" / "bert_chinese_vocab.txt"
    if not corpus.exists() or not vocab.exists():
        pytest.skip("../shared/data/corpus/clue_small_sample.txt or the Google vocab is "
                    "not present (needs the shared data set)")
    with open(corpus, encoding="utf-8") as reader:
        lines = [line.rstrip("\n") for line in itertools.islice(reader, 3000)]
    python, native = processors(make_config(vocab, **settings))
    for line in lines:
        assert native.tokenize_sentence(line) == python.tokenize_sentence(line), line


@needs_c
def test_segmenter_words_are_taken_by_offset(small_vocab):
    python, native = processors(make_config(small_vocab, do_whole_word_mask=False))

    class Fixed:
        def __init__(self, words):
            self.words_list = words

        def words(self, text):
            return iter(self.words_list)  # any iterable, as in the Python path

    # Words that overrun or underrun the text only mark offsets inside it.
    for words in (["中华人民", "共和国"], ["中华"], ["中华人民共和国成立于一九四九年。", "多余"],
                  [], ["", "中", "", "华人"]):
        python.segmenter = native.segmenter = Fixed(words)
        assert native.tokenize_sentence("中华人民共和国") == python.tokenize_sentence("中华人民共和国")


@needs_c
def test_errors_in_callbacks_propagate(small_vocab):
    _, native = processors(make_config(small_vocab, do_whole_word_mask=False))

    class Failing:
        def words(self, text):
            raise RuntimeError("segmenter failed")

    native.segmenter = Failing()
    with pytest.raises(RuntimeError, match="segmenter failed"):
        native.tokenize_sentence("中国")
    native.segmenter = None
    assert native.tokenize_sentence("   ") == ([], [])  # no word: segmenter not called
    with pytest.raises(TypeError):
        native.tokenize_sentence(b"bytes")

    class NotIterable:
        def words(self, text):
            return 3

    with pytest.raises(TypeError):
        native._native.tokenize("中国", NotIterable())

    def fail(*_):
        raise KeyError("filler failed")

    def same(cp):
        return chr(cp)

    def cjk(cp):
        return "c"

    for args, error in (((fail, cjk, {}, fail), KeyError),  # normalize_entry raises
                        ((lambda cp: 5, cjk, {}, fail), TypeError),  # ... returns no str
                        ((same, lambda cp: "x", {}, fail), ValueError),  # unknown class
                        ((same, cjk, {}, fail), KeyError),  # word_entry raises
                        ((same, cjk, {"中": [1]}, fail), TypeError)):  # malformed entry
        with pytest.raises(error):
            _native_tokenize.Tokenizer(*args).tokenize("中", None)


@needs_c
def test_no_reference_or_memory_leaks(small_vocab):
    _, native = processors(make_config(small_vocab, do_whole_word_mask=False))
    sentences = synthetic_sentences(60, seed=9)

    class Stub:
        def words(self, text):
            return words_list

    native.segmenter = Stub()
    words_list = ["中华", "人"]
    tokenize = native._native.tokenize
    for sentence in sentences:
        tokenize(sentence, native.segmenter)
    tracked = [native.tokenizer.vocab[token] for token in ("中", "华", "hello", "[UNK]")]
    before = [sys.getrefcount(obj) for obj in tracked + [words_list, sentences[5]]]


    start = util.resident_bytes()
    for index in range(20000):
        tokenize(sentences[index % len(sentences)], native.segmenter)
    assert util.resident_bytes() - start < 4 << 20
    after = [sys.getrefcount(obj) for obj in tracked + [words_list, sentences[5]]]
    assert after == before


@needs_c
def test_processor_with_c_tokenizer_is_garbage_collected(small_vocab):
    native = make_processor(make_config(small_vocab, do_whole_word_mask=False), use_native=True)
    native.tokenize_sentence("中国 hello")
    reference = weakref.ref(native)
    del native
    gc.collect()
    assert reference() is None  # the processor <-> C tokenizer cycle is collectable


def test_use_native_choices(small_vocab, monkeypatch):
    config = make_config(small_vocab, do_whole_word_mask=False)
    assert make_processor(config, use_native=False)._native is None
    monkeypatch.setenv("ZH_PRETRAIN_PURE_PYTHON", "1")
    assert make_processor(config)._native is None
    monkeypatch.setitem(sys.modules, "data_gen.native._tokenize", None)  # as if not built
    with pytest.raises(ImportError, match="use_native=True but the C extension"):
        make_processor(config, use_native=True)


@needs_c
def test_cli_output_is_byte_identical_with_and_without_c(tmp_path):
    vocab = util.write_vocab(tmp_path, extra=EXTRA_VOCAB)
    rng = random.Random(4)
    documents = [[rng.choice(PIECES) + rng.choice(util.SENTENCES) + rng.choice(PIECES)
                  for _ in range(rng.randint(1, 6))] for _ in range(60)]
    documents = [[line.replace("\n", " ").replace("\r", " ").replace("\ud800", "")
                  for line in doc] for doc in documents]  # one line each, valid UTF-8
    corpus = util.write_corpus(tmp_path / "corpus.txt", documents)
    outputs = {}
    for pure in ("1", ""):
        env = dict(os.environ, ZH_PRETRAIN_PURE_PYTHON=pure)
        out = tmp_path / f"out{pure or 'c'}.tfrecord"
        process = subprocess.run(
            [sys.executable, "-m", "data_gen.create_pretraining_data", f"--input_file={corpus}",
             f"--output_file={out}", f"--vocab_file={vocab}", "--max_seq_length=64",
             "--dupe_factor=2", "--num_workers=1", "--noprogress", "--mode=albert"],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert process.returncode == 0, process.stderr
        outputs[pure] = out.read_bytes()
    assert len(outputs[""]) > 1000
    assert outputs["1"] == outputs[""]


@needs_c
@pytest.mark.parametrize("mode", ["roberta", "albert", "bert"])
def test_whole_chunk_is_identical_on_the_c_and_python_paths(small_vocab, mode):
    config = make_config(small_vocab, mode=mode, max_seq_length=32, max_predictions_per_seq=5,
                         dupe_factor=3)
    python, c_path = processors(config)
    # use_native=False reaches every accelerator, the jieba cutter included.
    assert python._native is None and not python.segmenter._fast.native
    assert isinstance(python._mask_and_encode, functools.partial)
    assert c_path.segmenter._fast.native
    documents = [list(util.SENTENCES[i:i + 1 + i % 4]) for i in range(len(util.SENTENCES))]
    documents += [[line] for line in synthetic_sentences(40, seed=5) if line.strip()]
    expected, got = python.process(3, documents), c_path.process(3, documents)
    assert len(got) > 40 and got.framed == expected.framed
    assert (got.ends, got.masked, got.max_ids) == (expected.ends, expected.masked,
                                                    expected.max_ids)
    assert got.counts == expected.counts
