"""NER tag schemes (finetune/tag_schemes.py): parsing, detection, problems, spans.

Expected chunks follow conlleval.pl / seqeval's default mode: the examples
come from seqeval's documentation and tests (get_entities) and from
conlleval's start/end-of-chunk rules, worked by hand.
"""
import random

import pytest

from common.cli_options import UserError
from finetune import tag_schemes
from finetune.tag_schemes import (SCHEMES, TagSchemeError, convert_tags, detect_scheme,
                                  normalise_scheme, parse_tag, sequence_problems,
                                  spans_to_tags, tags_to_spans)


@pytest.mark.parametrize("tag, expected", [
    ("O", ("O", None)),
    ("B-PER", ("B", "PER")),
    ("I-ORG-COMPANY", ("I", "ORG-COMPANY")),
    ("E-GPE_NAM", ("E", "GPE_NAM")),
    ("S-組織", ("S", "組織")),
    ("M-LOC", ("M", "LOC")),
    ("B--", ("B", "-")),
])
def test_parse_tag(tag, expected):
    assert parse_tag(tag) == expected


@pytest.mark.parametrize("tag", ["PER", "B-", "B", "X-PER", "b-PER", "o", "", "-PER",
                                 "BI-PER", "B_PER", None, 3])
def test_parse_tag_rejects_malformed_tags(tag):
    with pytest.raises(TagSchemeError, match=r"<PREFIX>-<TYPE>") as raised:
        parse_tag(tag)
    assert isinstance(raised.value, UserError)


@pytest.mark.parametrize("name, expected", [
    ("BIO", "BIO"), ("bio", "BIO"), ("IOB2", "BIO"), ("iob2", "BIO"),
    ("BIOES", "BIOES"), ("bioes", "BIOES"), ("Bmes", "BMES"), (" BMES ", "BMES"),
])
def test_normalise_scheme(name, expected):
    assert normalise_scheme(name) == expected


@pytest.mark.parametrize("name", ["IOB1", "BILOU", "", None, "BIOE"])
def test_normalise_scheme_rejects_unknown_names(name):
    with pytest.raises(TagSchemeError, match="BIO, BIOES, BMES"):
        normalise_scheme(name)


def test_schemes_constant():
    assert SCHEMES == ("BIO", "BIOES", "BMES")


@pytest.mark.parametrize("tags, expected", [
    (["O", "B-PER", "I-PER", "O", "B-LOC"], "BIO"),
    (["I-PER", "I-PER"], "BIO"),                       # I only (IOB1-like data)
    (["O", "O"], "BIO"),                               # no entity at all
    ([], "BIO"),
    (["B-PER", "I-PER", "E-PER", "S-LOC", "O"], "BIOES"),
    (["B-PER", "E-PER", "O"], "BIOES"),                # E without I or M
    (["S-LOC", "O"], "BIOES"),                         # S only
    (["B-PER", "M-PER", "E-PER", "S-LOC"], "BMES"),
    (["M-PER"], "BMES"),
])
def test_detect_scheme(tags, expected):
    assert detect_scheme(tags) == expected
    assert detect_scheme(iter(tags)) == expected


def test_detect_scheme_rejects_m_with_i_naming_the_tags():
    with pytest.raises(TagSchemeError) as raised:
        detect_scheme(["B-PER", "M-PER", "E-PER", "I-LOC", "O"])
    assert "'M-PER'" in str(raised.value) and "'I-LOC'" in str(raised.value)


def test_detect_scheme_rejects_malformed_tags_naming_them():
    with pytest.raises(TagSchemeError) as raised:
        detect_scheme(["B-PER", "PER", "O", "X-LOC", "PER"])
    message = str(raised.value)
    assert "'PER'" in message and "'X-LOC'" in message and "<PREFIX>-<TYPE>" in message


def test_sequence_problems_empty_for_well_formed_sequences():
    assert sequence_problems(["O", "B-PER", "I-PER", "B-PER", "O", "B-LOC"], "BIO") == []
    assert sequence_problems(["B-PER", "I-PER", "E-PER", "S-PER", "O", "S-LOC"], "BIOES") == []
    assert sequence_problems(["B-PER", "M-PER", "M-PER", "E-PER", "S-LOC"], "BMES") == []
    assert sequence_problems([], "BIOES") == []


def indices(problems):
    return [index for index, _ in problems]


def test_sequence_problems_bio():
    # 0: I after the start; 3: I after O; 5: I-LOC after B-PER (type change).
    tags = ["I-PER", "I-PER", "O", "I-ORG", "B-PER", "I-LOC"]
    problems = sequence_problems(tags, "IOB2")
    assert indices(problems) == [0, 3, 5]
    assert "'I-ORG' after 'O'" in problems[1][1]
    assert "type changes" in problems[2][1]
    # BIO needs no explicit end: B-X then O or B-Y is fine.
    assert sequence_problems(["B-PER", "B-LOC", "O", "B-PER"], "BIO") == []


def test_sequence_problems_bio_reports_prefixes_it_does_not_have():
    problems = sequence_problems(["S-PER", "O", "B-LOC", "E-LOC"], "BIO")
    assert indices(problems) == [0, 3]
    assert "prefix S" in problems[0][1] and "prefix E" in problems[1][1]


def test_sequence_problems_bioes():
    tags = ["E-ORG",            # 0: E at the start
            "B-PER", "O",       # 1: B not followed by I/E
            "B-LOC", "I-LOC",   # 4: I not followed by I/E (next is S)
            "S-LOC",
            "I-PER", "E-PER",   # 6: I after S
            "B-ORG", "E-LOC",   # 9: type changes
            "B-PER"]            # 10: B at the end of the sequence
    problems = sequence_problems(tags, "BIOES")
    assert indices(problems) == [0, 1, 4, 6, 9, 10]
    assert "must be followed by I-PER or E-PER" in problems[1][1]
    assert "end of the sequence" in problems[5][1]


def test_sequence_problems_msra_style_unmatched_end():
    # Two more E-ORG than B-ORG: each unmatched entity is reported once, where it
    # wrongly starts (the I-ORG after O, the E-ORG after O).
    tags = ["B-ORG", "I-ORG", "E-ORG", "O", "I-ORG", "E-ORG", "O", "E-ORG"]
    assert indices(sequence_problems(tags, "BIOES")) == [4, 7]
    assert indices(sequence_problems(["O", "E-ORG", "S-PER"], "BIOES")) == [1]


def test_sequence_problems_bmes():
    assert indices(sequence_problems(["B-PER", "M-PER", "O"], "BMES")) == [1]
    assert indices(sequence_problems(["M-PER", "E-PER"], "BMES")) == [0]
    # I is not a BMES prefix: reported once, neighbours unchecked.
    problems = sequence_problems(["B-PER", "I-PER", "E-PER", "O", "B-LOC", "E-LOC"], "BMES")
    assert indices(problems) == [1]
    assert "prefix I" in problems[0][1]
    # ... and M is not a BIOES prefix.
    assert indices(sequence_problems(["B-PER", "M-PER", "E-PER"], "BIOES")) == [1]


def test_sequence_problems_rejects_malformed_tags():
    with pytest.raises(TagSchemeError):
        sequence_problems(["B-PER", "PER"], "BIO")


@pytest.mark.parametrize("tags, expected", [
    # seqeval's get_entities docstring and test (end made exclusive).
    (["B-PER", "I-PER", "O", "B-LOC"], [("PER", 0, 2), ("LOC", 3, 4)]),
    (["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O", "B-PER", "I-PER"],
     [("MISC", 3, 6), ("PER", 7, 9)]),
    # An I after O (or at the start) starts a chunk (seqeval's conll F1 test).
    (["I-ORG", "I-ORG"], [("ORG", 0, 2)]),
    (["O", "I-PER", "I-PER", "O"], [("PER", 1, 3)]),
    # A type change inside a chunk starts a new one.
    (["B-PER", "I-LOC", "I-LOC"], [("PER", 0, 1), ("LOC", 1, 3)]),
    (["I-PER", "I-ORG"], [("PER", 0, 1), ("ORG", 1, 2)]),
    # B always starts a chunk.
    (["B-PER", "B-PER", "I-PER"], [("PER", 0, 1), ("PER", 1, 3)]),
    (["I-NP", "I-NP", "B-NP"], [("NP", 0, 2), ("NP", 2, 3)]),
    # Types keep their '-' and '_'.
    (["B-ORG-COMPANY", "I-ORG-COMPANY", "B-GPE_NAM"],
     [("ORG-COMPANY", 0, 2), ("GPE_NAM", 2, 3)]),
    ([], []),
    (["O", "O"], []),
])
def test_tags_to_spans_bio(tags, expected):
    assert tags_to_spans(tags, "BIO") == expected


@pytest.mark.parametrize("tags, expected", [
    (["B-PER", "I-PER", "E-PER", "O", "S-LOC"], [("PER", 0, 3), ("LOC", 4, 5)]),
    (["S-LOC", "S-LOC"], [("LOC", 0, 1), ("LOC", 1, 2)]),
    # E after O is a one-token chunk; so is E after E or S.
    (["O", "E-ORG", "O"], [("ORG", 1, 2)]),
    (["B-ORG", "E-ORG", "E-ORG"], [("ORG", 0, 2), ("ORG", 2, 3)]),
    (["S-ORG", "E-ORG"], [("ORG", 0, 1), ("ORG", 1, 2)]),
    # I after E or S starts a new chunk; an unclosed chunk ends at O or the end.
    (["B-PER", "E-PER", "I-PER", "I-PER"], [("PER", 0, 2), ("PER", 2, 4)]),
    (["S-PER", "I-PER", "O"], [("PER", 0, 1), ("PER", 1, 2)]),
    (["B-PER", "I-PER", "O", "B-LOC"], [("PER", 0, 2), ("LOC", 3, 4)]),
    # S ends a running chunk; a type change inside splits it.
    (["B-PER", "I-PER", "S-PER"], [("PER", 0, 2), ("PER", 2, 3)]),
    (["B-PER", "I-PER", "E-LOC"], [("PER", 0, 2), ("LOC", 2, 3)]),
])
def test_tags_to_spans_bioes(tags, expected):
    assert tags_to_spans(tags, "BIOES") == expected


def test_tags_to_spans_bmes_reads_m_as_i():
    for tags in (["B-PER", "I-PER", "E-PER", "O", "S-LOC"], ["O", "I-PER", "E-PER"],
                 ["B-PER", "I-LOC", "E-LOC"], ["S-PER", "I-PER", "I-PER"]):
        bmes = [tag.replace("I-", "M-", 1) for tag in tags]
        assert tags_to_spans(bmes, "BMES") == tags_to_spans(tags, "BIOES")
    assert tags_to_spans(["B-PER", "M-PER", "M-PER", "E-PER", "S-LOC"], "BMES") == [
        ("PER", 0, 4), ("LOC", 4, 5)]


def test_tags_to_spans_rejects_malformed_tags_and_schemes():
    with pytest.raises(TagSchemeError):
        tags_to_spans(["B-PER", "LOC"], "BIO")
    with pytest.raises(TagSchemeError):
        tags_to_spans(["B-PER"], "IOBX")


@pytest.mark.parametrize("scheme, expected", [
    ("BIO", ["B-PER", "I-PER", "I-PER", "O", "B-LOC", "B-LOC", "B-ORG", "I-ORG"]),
    ("BIOES", ["B-PER", "I-PER", "E-PER", "O", "S-LOC", "S-LOC", "B-ORG", "E-ORG"]),
    ("BMES", ["B-PER", "M-PER", "E-PER", "O", "S-LOC", "S-LOC", "B-ORG", "E-ORG"]),
])
def test_spans_to_tags(scheme, expected):
    spans = [("LOC", 5, 6), ("PER", 0, 3), ("LOC", 4, 5), ("ORG", 6, 8)]  # any order
    assert spans_to_tags(spans, 8, scheme) == expected
    assert sequence_problems(expected, scheme) == []


@pytest.mark.parametrize("spans, length", [
    ([("PER", 0, 3), ("LOC", 2, 4)], 5),    # overlap
    ([("PER", 0, 3), ("PER", 0, 3)], 5),    # the same span twice
    ([("PER", 3, 6)], 5),                   # past the end
    ([("PER", -1, 1)], 5),                  # before the start
    ([("PER", 2, 2)], 5),                   # empty
    ([("", 0, 1)], 5),                      # no type
    ([("PER", 0)], 5),                      # not a triple
    ([], -1),
])
def test_spans_to_tags_rejects_invalid_spans(spans, length):
    with pytest.raises(TagSchemeError):
        spans_to_tags(spans, length, "BIO")


def random_spans(rng, length):
    types = ["PER", "LOC", "ORG-COMPANY", "GPE_NAM", "X"]
    spans, position = [], 0
    while position < length:
        position += rng.choice([0, 0, 1, 2])
        if position >= length:
            break
        end = min(length, position + rng.choice([1, 1, 2, 3, 5]))
        spans.append((rng.choice(types), position, end))
        position = end
    return spans


@pytest.mark.parametrize("scheme", SCHEMES)
def test_round_trip_over_random_span_sets(scheme):
    rng = random.Random(20240611)
    for _ in range(2000):
        length = rng.randint(0, 20)
        spans = random_spans(rng, length)
        tags = spans_to_tags(spans, length, scheme)
        assert len(tags) == length
        assert tags_to_spans(tags, scheme) == spans
        assert sequence_problems(tags, scheme) == []


EXAMPLE = {
    "BIO": ["B-PER", "I-PER", "I-PER", "O", "B-LOC", "B-LOC", "O", "B-ORG", "I-ORG"],
    "BIOES": ["B-PER", "I-PER", "E-PER", "O", "S-LOC", "S-LOC", "O", "B-ORG", "E-ORG"],
    "BMES": ["B-PER", "M-PER", "E-PER", "O", "S-LOC", "S-LOC", "O", "B-ORG", "E-ORG"],
}


@pytest.mark.parametrize("source", SCHEMES)
@pytest.mark.parametrize("target", SCHEMES)
def test_convert_tags_between_all_schemes(source, target):
    assert convert_tags(EXAMPLE[source], source, target) == EXAMPLE[target]
    assert convert_tags(iter(EXAMPLE[source]), source.lower(), target) == EXAMPLE[target]


def test_convert_tags_random_sequences_keep_their_spans():
    rng = random.Random(7)
    for _ in range(500):
        length = rng.randint(0, 15)
        spans = random_spans(rng, length)
        for source in SCHEMES:
            tags = spans_to_tags(spans, length, source)
            for target in SCHEMES:
                converted = convert_tags(tags, source, target)
                assert tags_to_spans(converted, target) == spans


def test_convert_tags_repairs_ill_formed_input_the_conlleval_way():
    assert convert_tags(["I-PER", "I-PER", "O", "E-ORG"], "BIOES", "BIOES") == [
        "B-PER", "E-PER", "O", "S-ORG"]
    assert convert_tags(["O", "I-PER", "I-LOC"], "BIO", "BMES") == ["O", "S-PER", "S-LOC"]


def test_iob2_alias_everywhere():
    tags = ["B-PER", "I-PER", "O"]
    assert tags_to_spans(tags, "IOB2") == [("PER", 0, 2)]
    assert spans_to_tags([("PER", 0, 2)], 3, "iob2") == tags
    assert tag_schemes.normalise_scheme("IOB2") == "BIO"
