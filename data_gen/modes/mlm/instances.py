"""Training instances from tokenized documents, one builder per --mode.

A sentence is a pair (ids, starts) of equal-length lists (see masking.py for
`starts`); a document is a list of sentences. Builders return instances
(ids, starts, segment_ids, label) with [CLS]/[SEP] in place, unpadded.

  roberta  full-sentence packing, single segment, label 0.
  albert   sentence-order prediction: label 1 = A and B swapped.
  bert     next-sentence prediction: label 1 = B is random (google-research/bert).
  xlnet    zihangdai/xlnet's records: built by data_gen.modes.xlnet.xlnet_instances, not here.
"""
import collections
import random as random_module

from data_gen import native


class SpecialIds:
    """Ids of [CLS] and [SEP]."""

    def __init__(self, cls_id, sep_id):
        self.cls_id = cls_id
        self.sep_id = sep_id


def _cut_point(starts, begin, limit):
    """Largest cut in (begin, begin+limit] that does not split a unit.

    Falls back to begin+limit (a hard cut) when one unit is longer than limit.
    """
    cut = _cut_point_soft(starts, begin, limit)
    if cut == len(starts) or cut > begin:
        return cut
    return begin + limit


def split_long_sentence(sentence, max_tokens):
    """Splits a sentence into pieces of at most max_tokens, at unit boundaries."""
    ids, starts = sentence
    if len(ids) <= max_tokens:
        return [sentence]
    pieces = []
    begin = 0
    while begin < len(ids):
        cut = _cut_point(starts, begin, max_tokens)
        piece_starts = starts[begin:cut]
        if piece_starts[0] == 0:
            piece_starts = [1] + piece_starts[1:]
        pieces.append((ids[begin:cut], piece_starts))
        begin = cut
    return pieces


def _assemble(tokens_a, tokens_b, special):
    """[CLS] A [SEP] (B [SEP]) -> (ids, starts, segment_ids)."""
    ids_a, starts_a = tokens_a
    ids = [special.cls_id] + ids_a + [special.sep_id]
    starts = [-1] + starts_a + [-1]
    segment_ids = [0] * len(ids)
    if tokens_b is not None:
        ids_b, starts_b = tokens_b
        ids += ids_b + [special.sep_id]
        starts += starts_b + [-1]
        segment_ids += [1] * (len(ids_b) + 1)
    return ids, starts, segment_ids


def create_roberta_instances(documents, max_seq_length, special, pack_within_document=False):
    """Full-sentence packing: fill each instance to max_seq_length - 2 tokens.

    Sentences run on across documents with a [SEP] between documents (unless
    pack_within_document). A sentence that does not fit the room left is cut
    at a unit boundary and continues in the next instance: nothing is dropped.
    """
    max_tokens = max_seq_length - 2
    instances = []
    ids, starts = [], []

    def flush():
        if ids:
            instance_ids = [special.cls_id] + ids + [special.sep_id]
            instance_starts = [-1] + starts + [-1]
            instances.append((instance_ids, instance_starts, [0] * len(instance_ids), 0))
        del ids[:], starts[:]

    for document in documents:
        if ids:
            if pack_within_document or len(ids) + 2 > max_tokens:
                flush()
            else:
                ids.append(special.sep_id)
                starts.append(-1)
        for sentence_ids, sentence_starts in document:
            begin = 0
            while begin < len(sentence_ids):
                room = max_tokens - len(ids)
                cut = _cut_point_soft(sentence_starts, begin, room)
                if cut == begin:  # the next unit does not fit in the room left
                    if ids:
                        flush()
                        continue
                    cut = begin + room  # one unit longer than an instance: hard cut
                piece_starts = sentence_starts[begin:cut]
                if piece_starts[0] == 0 and not ids:
                    piece_starts = [1] + piece_starts[1:]
                ids.extend(sentence_ids[begin:cut])
                starts.extend(piece_starts)
                begin = cut
                if begin < len(sentence_ids) or len(ids) >= max_tokens:
                    flush()
    flush()
    return instances


def _cut_point_soft(starts, begin, limit):
    """Like _cut_point but returns `begin` instead of a hard cut."""
    end = begin + limit
    if end >= len(starts):
        return len(starts)
    cut = end
    while cut > begin and starts[cut] == 0:
        cut -= 1
    return cut


def _concat(sentences):
    ids, starts = [], []
    for sentence_ids, sentence_starts in sentences:
        ids.extend(sentence_ids)
        starts.extend(sentence_starts)
    return ids, starts


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """Trims the longer of A and B, randomly from its front or back (BERT).

    Returns the truncated (ids, starts) of A and B; the inputs are left as
    they are. As in google-research/bert, one token is removed at a time
    with one draw each, so the draws are the same; the decisions are taken
    on lengths and applied with one slice per side.
    """
    length_a, length_b = len(tokens_a[0]), len(tokens_b[0])
    front_a = front_b = 0
    random = rng.random
    while length_a + length_b > max_num_tokens:
        if length_a > length_b:
            length_a -= 1
            if random() < 0.5:
                front_a += 1
        else:
            length_b -= 1
            if random() < 0.5:
                front_b += 1
    return (_trimmed(tokens_a, front_a, length_a), _trimmed(tokens_b, front_b, length_b))


def _trimmed(tokens, front, length):
    """tokens[front:front + length], its first token marked as a unit start."""
    ids, starts = tokens
    if front or length != len(ids):
        ids, starts = ids[front:front + length], starts[front:front + length]
    if starts and starts[0] == 0:
        starts = [1] + starts[1:]
    return ids, starts


def _split_inside(sentence, rng):
    """Splits one sentence into non-empty A and B, at a unit boundary if possible."""
    ids, starts = sentence
    boundaries = [i for i in range(1, len(ids)) if starts[i] == 1]
    if not boundaries:
        boundaries = list(range(1, len(ids)))
    cut = boundaries[rng.randrange(len(boundaries))]
    tail_starts = starts[cut:]
    tail_starts[0] = 1
    return (ids[:cut], starts[:cut]), (ids[cut:], tail_starts)


def create_pair_instances(documents, document_index, max_seq_length, short_seq_prob,
                          special, rng, task, account):
    """Instances of one document for albert (task "sop") or bert (task "nsp").

    Follows google-research/bert's create_instances_from_document; for SOP the
    random-next branch is replaced by ALBERT's swap, and a chunk of one
    sentence is split inside the sentence instead of borrowing another document.
    """
    max_num_tokens = max_seq_length - 3
    document = []
    for sentence in documents[document_index]:
        document.extend(split_long_sentence(sentence, max_num_tokens))
    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)

    instances = []
    current_chunk = []
    current_length = 0
    i = 0
    while i < len(document):
        segment = document[i]
        current_chunk.append(segment)
        current_length += len(segment[0])
        if i == len(document) - 1 or current_length >= target_seq_length:
            label = 0
            tokens_b = None
            other = _other_document(documents, document_index, rng) if task == "nsp" else None
            if len(current_chunk) == 1 and (task == "sop" or other is None):
                if current_length < 2:
                    account["documents_too_short_for_pair"] += 1
                    current_chunk, current_length = [], 0
                    i += 1
                    continue
                tokens_a, tokens_b = _split_inside(current_chunk[0], rng)
                if task == "sop" and rng.random() < 0.5:
                    tokens_a, tokens_b, label = tokens_b, tokens_a, 1
            else:
                a_end = 1
                if len(current_chunk) >= 2:
                    a_end = rng.randint(1, len(current_chunk) - 1)
                tokens_a = _concat(current_chunk[:a_end])
                if task == "nsp" and other is not None and (
                        len(current_chunk) == 1 or rng.random() < 0.5):
                    label = 1
                    target_b_length = target_seq_length - len(tokens_a[0])
                    random_document = other
                    random_start = rng.randint(0, len(random_document) - 1)
                    picked = []
                    length = 0
                    for j in range(random_start, len(random_document)):
                        picked.append(random_document[j])
                        length += len(random_document[j][0])
                        if length >= target_b_length:
                            break
                    tokens_b = _concat(picked)
                    i -= len(current_chunk) - a_end  # unused segments are not wasted
                else:
                    tokens_b = _concat(current_chunk[a_end:])
                    if task == "sop" and rng.random() < 0.5:
                        tokens_a, tokens_b, label = tokens_b, tokens_a, 1
            tokens_a, tokens_b = truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
            if tokens_a[0] and tokens_b[0]:
                ids, starts, segment_ids = _assemble(tokens_a, tokens_b, special)
                instances.append((ids, starts, segment_ids, label))
            current_chunk, current_length = [], 0
        i += 1
    return instances


def _other_document(documents, document_index, rng):
    """A random document other than document_index (None if there is none)."""
    if len(documents) < 2:
        return None
    index = rng.randrange(len(documents) - 1)
    if index >= document_index:
        index += 1
    return documents[index]


def create_all_pair_instances(documents, dupe_factor, max_seq_length, short_seq_prob, special,
                              rng, task, account, use_native=None):
    """All dupe passes of a chunk's pair instances, in build order (not shuffled).

    The same list as calling create_pair_instances for every document index
    in each of dupe_factor passes. use_native: None runs the C extension
    data_gen.native._instances when data_gen.native.load() provides it, False
    always the Python loop, True requires the C extension even if
    ZH_PRETRAIN_PURE_PYTHON is set (ImportError if it is not built). Both give
    the same instances, account counts and generator state; inputs the C path
    does not take (see _native_arguments) run in Python.
    """
    module = _instances_module(use_native)
    if module is not None:
        arguments = _native_arguments(documents, dupe_factor, max_seq_length, short_seq_prob,
                                      special, rng, task, account)
        if arguments is not None:
            built = module.build_pair_instances(*arguments)
            if built is not NotImplemented:
                return built
    built = []
    for _ in range(dupe_factor):
        for document_index in range(len(documents)):
            built.extend(create_pair_instances(documents, document_index, max_seq_length,
                                               short_seq_prob, special, rng, task, account))
    return built


def shuffle(items, rng, use_native=None):
    """rng.shuffle(items) (same draws, same order), in C for a list and a plain random.Random."""
    module = _instances_module(use_native)
    if module is not None and type(items) is list and _plain_random(rng):
        module.shuffle(items, rng)
    else:
        rng.shuffle(items)


def _instances_module(use_native):
    """data_gen.native._instances, or None for the Python path (see native.resolve)."""
    return native.resolve("_instances", use_native)


_RNG_METHODS = ("random", "getrandbits", "_randbelow", "randrange", "randint")


def _plain_random(rng):
    """True if rng draws exactly as random.Random (no method overridden)."""
    if not isinstance(rng, random_module.Random):
        return False
    cls = type(rng)
    if any(getattr(cls, name, None) is not getattr(random_module.Random, name)
           for name in _RNG_METHODS):
        return False
    return not any(name in getattr(rng, "__dict__", ()) for name in _RNG_METHODS)


def _native_arguments(documents, dupe_factor, max_seq_length, short_seq_prob, special, rng,
                      task, account):
    """The C call's arguments, or None when the Python path must run.

    The C path reads the documents itself and declines (NotImplemented,
    before any draw) what it does not take; here are the other arguments.
    """
    exact_prob = type(short_seq_prob) is float or (
        type(short_seq_prob) in (int, bool) and abs(short_seq_prob) <= 1 << 53)
    if (task not in ("sop", "nsp") or type(dupe_factor) is not int
            or not 0 <= dupe_factor < 1 << 31 or type(max_seq_length) is not int
            or not 4 <= max_seq_length < 1 << 31 or not exact_prob
            or type(account) not in (collections.Counter, dict) or not _plain_random(rng)):
        return None
    try:
        cls_id, sep_id = special.cls_id, special.sep_id
    except AttributeError:
        return None
    return (documents, dupe_factor, max_seq_length, float(short_seq_prob), cls_id, sep_id, rng,
            task == "nsp", account)
