"""data_gen.modes.mlm.masking (+ whole-word units from the chunk processor's tokenize_sentence)."""
import collections
import random

import jieba
import pytest

from tests.testutil import data_gen_runs as util
from conftest import shared_path
from data_gen.modes.mlm import masking
from data_gen import modes
from data_gen.modes.mlm.mlm_processing import MaskedLMChunkProcessor
from data_gen.config import GenerationConfig
from data_gen.text.tokenization import is_cjk_char
from tests.testutil.float32_bounds import binomial_tolerance

MASK_ID = 4


def _config(prob=0.15, cap=20, ngram=1, whole_word=True, replacements=range(100, 1100)):
    return masking.MaskingConfig(prob, cap, MASK_ID, list(replacements), whole_word, ngram)


def _random_sequence(rng, length):
    """[CLS] A [SEP] B [SEP] with random unit structure; ids 10.. so none is special."""
    starts = [-1]
    for _ in range(length - 3):
        starts.append(1 if rng.random() < 0.5 else 0)
    starts[1] = 1
    middle = len(starts) // 2
    starts[middle] = -1
    starts[middle + 1] = 1
    starts.append(1)
    starts.append(-1)
    ids = [2] + [rng.randrange(10, 1000) for _ in starts[1:-1]] + [3]
    ids[middle] = 3
    return ids, starts


def test_whole_word_units_group_continuations_and_skip_specials():
    starts = [-1, 1, 0, 0, 1, -1, 1, 0, -1]
    assert masking.whole_word_units(starts) == [(1, 4), (4, 5), (6, 8)]
    assert masking.whole_word_units(starts, do_whole_word_mask=False) == [
        (1, 2), (2, 3), (3, 4), (4, 5), (6, 7), (7, 8)]
    assert masking.token_boundary(starts) == [1, 1, 0, 0, 1, 1, 1, 0, 1]


def test_replacement_ids_exclude_special_unused_and_subword_tokens():
    vocab = {t: i for i, t in enumerate(
        ["[PAD]", "[unused1]", "[UNK]", "[CLS]", "<S>", "##中", "中", "<", "[", "a", "##a"])}
    assert masking.replacement_ids(vocab) == [6, 7, 8, 9]


@pytest.mark.parametrize("ngram", [1, 3])
def test_selection_invariants(ngram):
    rng = random.Random(7)
    config = _config(ngram=ngram)
    for _ in range(500):
        length = rng.randrange(8, 129)
        ids, starts = _random_sequence(rng, length)
        output, positions, labels = masking.create_masked_lm_predictions(ids, starts, rng, config)
        budget = min(20, max(1, round(len(ids) * 0.15)))
        assert positions == sorted(set(positions))
        assert 1 <= len(positions) <= budget
        assert len(positions) >= budget - 4  # units are at most a few tokens long
        assert all(starts[p] >= 0 for p in positions)  # never [CLS]/[SEP]
        assert labels == [ids[p] for p in positions]
        chosen = set(positions)
        for begin, end in masking.whole_word_units(starts):
            inside = [p in chosen for p in range(begin, end)]
            assert all(inside) or not any(inside), "a unit was masked partially"
        unchanged = [i for i in range(len(ids)) if i not in chosen]
        assert all(output[i] == ids[i] for i in unchanged)


def test_80_10_10_proportions_on_a_large_sample():
    rng = random.Random(11)
    config = _config(whole_word=False)
    outcome = collections.Counter()
    for _ in range(1500):
        ids, starts = _random_sequence(rng, 128)
        output, positions, labels = masking.create_masked_lm_predictions(ids, starts, rng, config)
        for position, label in zip(positions, labels):
            if output[position] == MASK_ID:
                outcome["mask"] += 1
            elif output[position] == label:
                outcome["keep"] += 1
            else:
                assert 100 <= output[position] < 1100  # from the replacement list only
                outcome["random"] += 1
    total = sum(outcome.values())
    assert total == 1500 * 19
    # each prediction is one draw: shares within 5 binomial standard errors (0.012, 0.009)
    assert abs(outcome["mask"] / total - 0.8) < binomial_tolerance(0.8, total)
    assert abs(outcome["keep"] / total - 0.1) < binomial_tolerance(0.1, total)
    assert abs(outcome["random"] / total - 0.1) < binomial_tolerance(0.1, total)


def test_ngram_masking_makes_longer_spans_that_never_cross_sep():
    def mean_run_length(ngram):
        rng = random.Random(5)
        config = _config(ngram=ngram, prob=0.3, cap=40)
        runs = []
        for _ in range(400):
            ids, starts = _random_sequence(rng, 128)
            starts = [s if s < 0 else 1 for s in starts]  # single-token units
            _, positions, _ = masking.create_masked_lm_predictions(ids, starts, rng, config)
            run = 1
            for previous, position in zip(positions, positions[1:]):
                if position == previous + 1:
                    assert starts[position] != -1
                    run += 1
                else:
                    runs.append(run)
                    run = 1
            runs.append(run)
        return sum(runs) / len(runs)

    unigram, trigram = mean_run_length(1), mean_run_length(3)
    # With P(n) = (6/11, 3/11, 2/11) the mean n is 18/11 = 1.64 before merging.
    assert trigram > unigram + 0.3


@pytest.fixture(scope="module")
def processor(tmp_path_factory):
    directory = tmp_path_factory.mktemp("vocab")
    config = GenerationConfig(input_file="unused", output_file="unused",
                              vocab_file=str(util.write_vocab(directory)), mode="roberta")
    return MaskedLMChunkProcessor(modes.get(config.mode), config)


def test_whole_jieba_words_are_masked_together(processor):
    rng = random.Random(3)
    config = _config(prob=0.3)
    checked_words = 0
    for sentence in util.SENTENCES:
        ids, starts = processor.tokenize_sentence(sentence)
        words = jieba.lcut(sentence)  # the reference, segmented independently here
        spans = []
        position = 0
        for word in words:
            if len(word) > 1 and all(is_cjk_char(c) for c in word):
                spans.append((position, position + len(word)))
            position += len(word)
        assert len(ids) == len(sentence)  # one token per character in this corpus
        for begin, end in spans:
            assert starts[begin] == 1 and all(s == 0 for s in starts[begin + 1:end])
        checked_words += len(spans)
        for _ in range(30):
            _, positions, _ = masking.create_masked_lm_predictions(
                [2] + ids + [3], [-1] + starts + [-1], rng, config)
            chosen = {p - 1 for p in positions}
            for begin, end in spans:
                inside = [p in chosen for p in range(begin, end)]
                assert all(inside) or not any(inside), sentence[begin:end]
    assert checked_words > 30


def test_masked_ids_are_never_subword_ids_with_google_vocab(tmp_path):
    vocab_file = shared_path("vocab", "bert_chinese_vocab.txt")
    config = GenerationConfig(input_file="unused", output_file="unused",
                              vocab_file=str(vocab_file))
    processor = MaskedLMChunkProcessor(modes.get(config.mode), config)
    vocab = processor.tokenizer.vocab
    subword_ids = {i for t, i in vocab.items() if t.startswith("##")}
    rng = random.Random(1)
    for sentence in util.SENTENCES:
        ids, starts = processor.tokenize_sentence(sentence)
        assert not subword_ids.intersection(ids)
        assert 0 in starts  # some characters continue a word...
        plain = processor.tokenizer.convert_tokens_to_ids(list(sentence))
        assert ids == plain  # ...but keep the plain character's id
        output, positions, labels = masking.create_masked_lm_predictions(
            [101] + ids + [102], [-1] + starts + [-1], rng, processor.masking_config)
        assert not subword_ids.intersection(labels)
        assert not subword_ids.intersection(output)
