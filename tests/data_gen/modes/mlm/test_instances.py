"""data_gen.modes.mlm.instances: roberta packing, albert SOP, bert NSP."""
import collections
import random

import pytest

from data_gen.modes.mlm import instances as inst

CLS, SEP = 2, 3
SPECIAL = inst.SpecialIds(CLS, SEP)


def _sentence(first_id, length, unit=2):
    """Distinct ids first_id.., units of `unit` tokens."""
    ids = list(range(first_id, first_id + length))
    starts = [1 if i % unit == 0 else 0 for i in range(length)]
    return ids, starts


def _documents(rng, num_documents, max_sentences=6, max_length=30, min_sentences=1):
    next_id = 10
    documents = []
    for _ in range(num_documents):
        document = []
        for _ in range(rng.randint(min_sentences, max_sentences)):
            length = rng.randint(1, max_length)
            document.append(_sentence(next_id, length))
            next_id += length
        documents.append(document)
    return documents


def test_split_long_sentence_cuts_at_unit_boundaries():
    ids, starts = _sentence(10, 11, unit=3)  # units: 0-2, 3-5, 6-8, 9-10 (ids 10..20)
    pieces = inst.split_long_sentence((ids, starts), 5)
    assert [p[0] for p in pieces] == [ids[0:3], ids[3:6], ids[6:11]]
    one_unit = ([1, 2, 3, 4, 5, 6, 7], [1, 0, 0, 0, 0, 0, 0])
    hard = inst.split_long_sentence(one_unit, 3)  # a unit longer than the limit: hard cuts
    assert [p[0] for p in hard] == [[1, 2, 3], [4, 5, 6], [7]]
    assert all(p[1][0] == 1 for p in hard)


@pytest.mark.parametrize("within", [False, True])
def test_roberta_packing_fills_instances_and_loses_nothing(within):
    rng = random.Random(0)
    documents = _documents(rng, 40)
    documents.append([_sentence(50000, 300)])  # longer than an instance: split, not dropped
    max_seq_length = 64
    built = inst.create_roberta_instances(documents, max_seq_length, SPECIAL, within)
    body = []
    for index, (ids, starts, segment_ids, label) in enumerate(built):
        assert ids[0] == CLS and ids[-1] == SEP and len(ids) <= max_seq_length
        assert segment_ids == [0] * len(ids) and label == 0
        assert starts[0] == -1 and starts[-1] == -1 and starts[1] == 1
        assert ids[-2] != SEP and ids[1] != SEP  # document separators only inside
        body.extend(ids[1:-1])
    if within:
        expected = []
        assert SEP not in body
        for document in documents:
            for ids, _ in document:
                expected.extend(ids)
        assert body == expected
    else:
        assert body.count(SEP) <= len(documents) - 1
        expected_ids = [i for d in documents for s in d for i in s[0]]
        assert [i for i in body if i != SEP] == expected_ids
        full = [len(ids) for ids, *_ in built[:-1]]
        # Packing fills each instance up to a unit boundary (units here are 2 tokens).
        assert min(full) >= max_seq_length - 2 - 2


def _pair_instances(task, seed=0, num_documents=300, short_seq_prob=0.0, min_sentences=1,
                    max_sentences=6):
    rng = random.Random(seed)
    documents = _documents(rng, num_documents, max_sentences, 12, min_sentences)
    account = collections.Counter()
    built = []
    for index in range(len(documents)):
        built.extend(inst.create_pair_instances(documents, index, 64, short_seq_prob, SPECIAL,
                                                rng, task, account))
    return documents, built, account


def _segments(ids, segment_ids):
    sep_a = ids.index(SEP)
    assert ids[0] == CLS and ids[-1] == SEP
    assert segment_ids == [0] * (sep_a + 1) + [1] * (len(ids) - sep_a - 1)
    return ids[1:sep_a], ids[sep_a + 1:-1]


def test_albert_sop_labels_balanced_and_order_reflects_label():
    documents, built, _ = _pair_instances("sop")
    position = {}
    for d, document in enumerate(documents):
        for ids, _ in document:
            for offset, token in enumerate(ids):
                position[token] = (d, offset, ids)
    labels = collections.Counter()
    for ids, starts, segment_ids, label in built:
        a, b = _segments(ids, segment_ids)
        assert a and b and len(ids) <= 64
        doc_a = {position[t][0] for t in a}
        doc_b = {position[t][0] for t in b}
        assert doc_a == doc_b and len(doc_a) == 1  # both spans from one document
        # ids grow along the document: label 0 = A before B, label 1 = swapped.
        if label == 0:
            assert max(a) < min(b)
        else:
            assert max(b) < min(a)
        labels[label] += 1
    total = labels[0] + labels[1]
    assert total > 100
    assert 0.4 < labels[1] / total < 0.6


def test_albert_one_sentence_document_is_split_inside_not_dropped():
    documents = [[_sentence(10, 9, unit=3)]]
    account = collections.Counter()
    rng = random.Random(4)
    seen = set()
    for _ in range(40):
        (ids, starts, segment_ids, label), = inst.create_pair_instances(
            documents, 0, 32, 0.0, SPECIAL, rng, "sop", account)
        a, b = _segments(ids, segment_ids)
        assert sorted(a + b) == list(range(10, 19))  # nothing lost
        assert len(a) % 3 == 0 or len(b) % 3 == 0  # cut at a unit boundary
        seen.add(label)
    assert seen == {0, 1}


def test_bert_nsp_labels_balanced_and_actual_next_is_contiguous():
    # google-research/bert always draws a random next for a one-sentence chunk,
    # (and the rest of a document after one), so long documents keep the
    # balance near 50%.
    documents, built, _ = _pair_instances("nsp", seed=2, num_documents=100, min_sentences=15,
                                          max_sentences=25)
    owner = {}
    for d, document in enumerate(documents):
        for ids, _ in document:
            for token in ids:
                owner[token] = d
    labels = collections.Counter()
    for ids, starts, segment_ids, label in built:
        a, b = _segments(ids, segment_ids)
        if label == 0:
            assert {owner[t] for t in a} == {owner[t] for t in b}
            assert max(a) < min(b)
        else:
            assert {owner[t] for t in a}.isdisjoint({owner[t] for t in b})
        labels[label] += 1
    total = sum(labels.values())
    assert total > 200
    assert 0.4 < labels[1] / total < 0.6


def test_short_seq_prob_gives_shorter_targets():
    _, long_only, _ = _pair_instances("sop", seed=3, short_seq_prob=0.0)
    _, with_short, _ = _pair_instances("sop", seed=3, short_seq_prob=1.0)
    mean = lambda built: sum(len(i[0]) for i in built) / len(built)  # noqa: E731
    assert mean(with_short) < mean(long_only)


def _truncate_one_at_a_time(tokens_a, tokens_b, max_num_tokens, rng):
    """google-research/bert's loop: pop one token of the longer side per draw."""
    ids_a, starts_a = list(tokens_a[0]), list(tokens_a[1])
    ids_b, starts_b = list(tokens_b[0]), list(tokens_b[1])
    while len(ids_a) + len(ids_b) > max_num_tokens:
        ids, starts = (ids_a, starts_a) if len(ids_a) > len(ids_b) else (ids_b, starts_b)
        index = 0 if rng.random() < 0.5 else -1
        del ids[index], starts[index]
    for starts in (starts_a, starts_b):
        if starts and starts[0] == 0:
            starts[0] = 1
    return (ids_a, starts_a), (ids_b, starts_b)


def test_truncate_seq_pair_equals_one_at_a_time_trimming_with_the_same_draws():
    for seed in range(200):
        rng = random.Random(seed)
        length_a, length_b = rng.randint(1, 60), rng.randint(1, 60)
        tokens_a = (list(range(length_a)), [rng.choice((0, 1)) for _ in range(length_a)])
        tokens_b = (list(range(100, 100 + length_b)), [rng.choice((0, 1)) for _ in range(length_b)])
        limit = rng.randint(2, 80)
        snapshot = (list(tokens_a[0]), list(tokens_a[1]), list(tokens_b[0]), list(tokens_b[1]))
        expected_rng, got_rng = random.Random(seed + 1000), random.Random(seed + 1000)
        expected = _truncate_one_at_a_time(tokens_a, tokens_b, limit, expected_rng)
        got = inst.truncate_seq_pair(tokens_a, tokens_b, limit, got_rng)
        assert got == expected
        assert len(got[0][0]) + len(got[1][0]) == min(limit, length_a + length_b)
        assert got_rng.getstate() == expected_rng.getstate()  # same number of draws
        assert (tokens_a[0], tokens_a[1], tokens_b[0], tokens_b[1]) == snapshot  # inputs kept
