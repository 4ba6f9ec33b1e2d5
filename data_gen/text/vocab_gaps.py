"""Characters of the corpus that the vocab maps to [UNK]: counted while tokenizing, reported in
the run's account (Google's Chinese vocab has no “ ” ‘ ’ … —: 1% of a newspaper's characters).

Per sentence the tokenizer's ids are searched for [UNK] (one C-level list.count); only a
sentence that has one is looked at character by character: its characters, normalised as
the tokenizer normalises them, that are neither a vocab token nor a "##" continuation. The
chunk's Counter carries `characters`, `unknown_characters` and one `unknown_character:<c>`
entry per such character; `summarize` moves those into a top list when the run's account is
made, and `account_lines` says it, with a warning above WARN_SHARE of the characters and
the command that adds them to a model's vocab (pretrain.checkpoints.vocab_surgery
--extend_from_corpus).
"""
PREFIX = "unknown_character:"
WARN_SHARE = 0.03
TOP = 10


class VocabGaps:
    """Counts one WordPiece tokenizer's [UNK] characters into a chunk's Counter."""

    def __init__(self, tokenizer, unk_id):
        self.vocab = tokenizer.vocab
        self.normalize = tokenizer.basic_tokenizer.normalize
        self.unk_id = unk_id

    def count(self, sentence, ids, counts):
        """Adds the sentence's characters (not whitespace) and those the vocab cannot spell."""
        counts["characters"] += len("".join(sentence.split()))
        if self.unk_id not in ids:
            return
        vocab = self.vocab
        for char in self.normalize(sentence):
            if not char.isspace() and char not in vocab and "##" + char not in vocab:
                counts["unknown_characters"] += 1
                counts[PREFIX + char] += 1


def summarize(account):
    """Moves the per-character counts of `account` (a dict) into account["unknown_top"]:
    [[character, count], ...], most frequent first (ties by character)."""
    found = {key[len(PREFIX):]: account.pop(key) for key in list(account)
             if key.startswith(PREFIX)}
    if "characters" in account:
        account["unknown_top"] = [[char, count] for char, count in
                                  sorted(found.items(), key=lambda item: (-item[1], item[0]))[:TOP]]
    return account


def account_lines(account, input_file=None):
    """The account's vocab line, and a WARNING line above WARN_SHARE; [] when not counted."""
    characters = account.get("characters")
    if not characters:
        return []
    unknown = account.get("unknown_characters", 0)
    share = unknown / characters
    top = ", ".join(f"{char} {count}" for char, count in account.get("unknown_top", []))
    lines = [f"[data_gen] vocab: {unknown} of {characters} characters ({share:.2%}) map to "
             f"[UNK]" + (f"; most frequent: {top}" if top else "")]
    if share > WARN_SHARE:
        lines.append(f"[data_gen] WARNING: {share:.1%} of the characters are [UNK] to this "
                     "vocab, above 3%: the model never sees them. Add them to the model's vocab "
                     "first (python -m pretrain.checkpoints.vocab_surgery --init_checkpoint=MODEL "
                     f"--extend_from_corpus={input_file or 'CORPUS'} --output_dir=OUT), then "
                     "make the data with OUT/vocab.txt")
    return lines


def unknown_characters(lines, tokenizer):
    """Counter of the characters of `lines` (text, any number) that `tokenizer`'s vocab cannot
    spell, normalised as it normalises them (the same rule as VocabGaps, for every line)."""
    import collections  # pylint: disable=import-outside-toplevel
    vocab, normalize = tokenizer.vocab, tokenizer.basic_tokenizer.normalize
    found = collections.Counter()
    for line in lines:
        for char in normalize(line):
            if not char.isspace() and char not in vocab and "##" + char not in vocab:
                found[char] += 1
    return found
