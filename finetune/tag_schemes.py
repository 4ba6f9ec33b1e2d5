"""NER tag schemes: parse tags, detect a file's scheme, tags <-> entity spans.

A tag is "O" or "<PREFIX>-<TYPE>": PREFIX one letter, TYPE non-empty (it may
contain '-' or '_'; the tag is split on its first '-'). The schemes:

    BIO   (alias IOB2)  B-begin, I-inside
    BIOES               B-begin, I-inside, E-end, S-single
    BMES                B-begin, M-middle, E-end, S-single

A span is `(type, start, end)` with `end` exclusive. `tags_to_spans` extracts
exactly the chunks conlleval.pl / seqeval's default (non-strict) mode extract,
for any sequence, well-formed or not: an I-X after O opens a chunk, a change of
type inside a chunk closes it and opens another, E-X after O is a one-token
chunk, and S-X / E-X always close their chunk. M is read exactly as I, so the
same entities give the same spans under BIOES and BMES. `sequence_problems`
lists the transitions a scheme forbids, for callers to count and report
(real corpora have a few) rather than refuse. Malformed tags raise
`TagSchemeError`, a `UserError`.
"""
import functools

from common.cli_options import UserError

SCHEMES = ("BIO", "BIOES", "BMES")
OUTSIDE = "O"
_ALIASES = {"IOB2": "BIO"}
_PREFIXES = {"BIO": ("B", "I"), "BIOES": ("B", "I", "E", "S"), "BMES": ("B", "M", "E", "S")}
_KNOWN_PREFIXES = ("B", "I", "M", "E", "S")
# The prefix that continues a chunk after B (I or M): E and S are shared.
_INSIDE = {"BIO": "I", "BIOES": "I", "BMES": "M"}
_TAG_FORM = ("a tag must be 'O' or '<PREFIX>-<TYPE>' with PREFIX one of "
             f"{', '.join(_KNOWN_PREFIXES)} and a non-empty TYPE, e.g. 'B-PER'")
_MAX_NAMED = 5


class TagSchemeError(UserError):
    """A malformed tag, an unknown or inconsistent scheme, or an invalid span."""


def parse_tag(tag):
    """`"B-PER"` -> `("B", "PER")`; `"O"` -> `("O", None)`; TagSchemeError if malformed."""
    if not isinstance(tag, str):
        raise TagSchemeError(f"malformed tag {tag!r} (not a string): {_TAG_FORM}")
    return _parse_tag(tag)


@functools.lru_cache(maxsize=8192)
def _parse_tag(tag):
    if tag == OUTSIDE:
        return OUTSIDE, None
    prefix, sep, entity_type = tag.partition("-")
    if not sep or prefix not in _KNOWN_PREFIXES or not entity_type:
        raise TagSchemeError(f"malformed tag {tag!r}: {_TAG_FORM}")
    return prefix, entity_type


def normalise_scheme(name):
    """The canonical name of a scheme (case-insensitive; IOB2 -> BIO)."""
    canonical = name.strip().upper() if isinstance(name, str) else None
    canonical = _ALIASES.get(canonical, canonical)
    if canonical not in SCHEMES:
        raise TagSchemeError(f"unknown tag scheme {name!r}: use one of "
                             f"{', '.join(SCHEMES)} (IOB2 is an alias of BIO)")
    return canonical


def _name_some(tags):
    tags = sorted(tags)
    shown = ", ".join(repr(t) for t in tags[:_MAX_NAMED])
    return shown + (f" and {len(tags) - _MAX_NAMED} more" if len(tags) > _MAX_NAMED else "")


def detect_scheme(tags):
    """The scheme of an iterable of tags (e.g. every tag of a training file).

    Only B/I (or no entity at all) -> "BIO"; E or S with I, or with neither I
    nor M -> "BIOES"; M -> "BMES". TagSchemeError for malformed tags or for M
    used together with I, naming the tags concerned.
    """
    malformed = set()
    examples = {}  # prefix -> distinct tags using it
    for tag in tags:
        try:
            prefix, _ = parse_tag(tag)
        except TagSchemeError:
            malformed.add(repr(tag) if not isinstance(tag, str) else tag)
            continue
        examples.setdefault(prefix, set()).add(tag)
    if malformed:
        raise TagSchemeError(f"cannot detect the tag scheme: malformed tag(s) "
                             f"{_name_some(malformed)}; {_TAG_FORM}")
    if "M" in examples and "I" in examples:
        raise TagSchemeError(
            "cannot detect the tag scheme: the tags mix M- (BMES) with I- (BIO/BIOES): "
            f"{_name_some(examples['M'])} with {_name_some(examples['I'])}; "
            "use one scheme throughout")
    if "M" in examples:
        return "BMES"
    if "E" in examples or "S" in examples:
        return "BIOES"
    return "BIO"


def _parse_all(tags):
    return [parse_tag(tag) for tag in tags]


def _describe(position, tags):
    return repr(tags[position]) if position < len(tags) else "the end of the sequence"


def sequence_problems(tags, scheme):
    """Ill-formed transitions of `tags` in `scheme`: a list of `(index, reason)`.

    BIO: an I-X not after B-X or I-X. BIOES/BMES: an I/M/E-X not after B-X or
    I/M-X of the same type; a B-X or I/M-X not followed by I/M/E-X of the same
    type. Any scheme: a prefix the scheme does not have (reported once, at its
    index; the transitions next to it are not checked). Each bad transition is
    reported once, at the index of the token that does not continue or is not
    continued; the list is empty for a well-formed sequence. TagSchemeError for
    a malformed tag.
    """
    scheme = normalise_scheme(scheme)
    tags = list(tags)
    parsed = _parse_all(tags)
    allowed = set(_PREFIXES[scheme]) | {OUTSIDE}
    inside = _INSIDE[scheme]
    closes_explicitly = scheme != "BIO"
    problems = []
    for index, (prefix, _) in enumerate(parsed):
        if prefix not in allowed:
            problems.append((index, f"{tags[index]!r} has prefix {prefix}, which {scheme} "
                                    f"does not use (its prefixes: {', '.join(_PREFIXES[scheme])})"))
    foreign = {index for index, _ in problems}
    continuing = (inside, "E") if closes_explicitly else (inside,)
    opening = ("B", inside)
    sentinel = (OUTSIDE, None)
    for index in range(len(parsed) + 1):
        if index in foreign or index - 1 in foreign:
            continue
        prev_prefix, prev_type = parsed[index - 1] if index > 0 else sentinel
        prefix, entity_type = parsed[index] if index < len(parsed) else sentinel
        prev_open = prev_prefix in opening
        continues = prefix in continuing
        if continues and not prev_open:
            after = f"after {tags[index - 1]!r}" if index > 0 else "at the start"
            problems.append((index, f"{tags[index]!r} {after}: {prefix}-{entity_type} must follow "
                                    f"B-{entity_type} or {inside}-{entity_type}"))
        elif continues and prev_type != entity_type:
            problems.append((index, f"{tags[index]!r} after {tags[index - 1]!r}: the type changes "
                                    "inside an entity"))
        elif closes_explicitly and prev_open and not continues:
            problems.append((index - 1, f"{tags[index - 1]!r} followed by "
                                        f"{_describe(index, tags)}: it must be followed by "
                                        f"{inside}-{prev_type} or E-{prev_type}"))
    problems.sort(key=lambda item: item[0])
    return problems


def _chunk_ends(prev_prefix, prev_type, prefix, entity_type):
    """conlleval: does the chunk holding the previous token end before this one?"""
    if prev_prefix == OUTSIDE:
        return False
    return (prev_prefix in ("E", "S") or prefix in ("B", "S", OUTSIDE)
            or prev_type != entity_type)


def _chunk_starts(prev_prefix, prev_type, prefix, entity_type):
    """conlleval: does a chunk start at this token?"""
    if prefix == OUTSIDE:
        return False
    return (prefix in ("B", "S") or prev_prefix in (OUTSIDE, "E", "S")
            or prev_type != entity_type)


def tags_to_spans(tags, scheme):
    """The chunks of `tags` as `(type, start, end)`, end exclusive, in order.

    The chunks conlleval.pl / seqeval (default mode) extract, whatever the
    sequence's problems; M is read as I. `scheme` is validated, but the
    extraction is the same for every scheme. TagSchemeError for a malformed tag.
    """
    normalise_scheme(scheme)
    spans = []
    prev_prefix, prev_type = OUTSIDE, None
    start = None
    parsed = _parse_all(tags)
    for index, (prefix, entity_type) in enumerate(parsed + [(OUTSIDE, None)]):
        if prefix == "M":
            prefix = "I"
        if _chunk_ends(prev_prefix, prev_type, prefix, entity_type):
            spans.append((prev_type, start, index))
        if _chunk_starts(prev_prefix, prev_type, prefix, entity_type):
            start = index
        prev_prefix, prev_type = prefix, entity_type
    return spans


def _check_spans(spans, length):
    if not isinstance(length, int) or length < 0:
        raise TagSchemeError(f"sequence length must be a non-negative integer, got {length!r}")
    checked = []
    for span in spans:
        try:
            entity_type, start, end = span
        except (TypeError, ValueError):
            raise TagSchemeError(f"span {span!r} is not (type, start, end)") from None
        if not isinstance(entity_type, str) or not entity_type:
            raise TagSchemeError(f"span {span!r}: the type must be a non-empty string")
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= length):
            raise TagSchemeError(f"span {span!r} is not inside [0, {length}) with start < end")
        checked.append((start, end, entity_type))
    checked.sort()
    for (_, end, _), following in zip(checked, checked[1:]):
        if following[0] < end:
            raise TagSchemeError(f"spans overlap: one ends at {end}, the next "
                                 f"{following[2]!r} starts at {following[0]}")
    return checked


def spans_to_tags(spans, length, scheme):
    """Well-formed tags of `length` tokens for non-overlapping `(type, start, end)` spans.

    A one-token span is S-X in BIOES/BMES and B-X in BIO. TagSchemeError for
    overlapping spans or spans outside [0, length).
    """
    scheme = normalise_scheme(scheme)
    inside = _INSIDE[scheme]
    checked = _check_spans(spans, length)
    tags = [OUTSIDE] * length
    for start, end, entity_type in checked:
        if scheme == "BIO":
            tags[start:end] = [f"B-{entity_type}"] + [f"I-{entity_type}"] * (end - start - 1)
        elif end - start == 1:
            tags[start] = f"S-{entity_type}"
        else:
            middle = [f"{inside}-{entity_type}"] * (end - start - 2)
            tags[start:end] = [f"B-{entity_type}"] + middle + [f"E-{entity_type}"]
    return tags


def convert_tags(tags, from_scheme, to_scheme):
    """`tags` rewritten from one scheme to another, through their spans."""
    tags = list(tags)
    return spans_to_tags(tags_to_spans(tags, from_scheme), len(tags), to_scheme)
