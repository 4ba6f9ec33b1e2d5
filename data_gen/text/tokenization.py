"""Tokenizer compatible with Google's BERT vocab files (e.g. bert-base-chinese).

Pipeline, per character then per word:
  1. clean: drop NUL, U+FFFD and control characters; every whitespace becomes " ".
  2. optional full-width -> half-width (U+FF01..U+FF5E -> ASCII, U+3000 -> " ").
  3. if do_lower_case: lower-case and strip accents (NFD, drop combining marks).
  4. basic split: whitespace separates words; every CJK character and every
     punctuation character is a word on its own.
  5. WordPiece: greedy longest match against the vocab, continuation pieces
     carry "##"; a word with no match (or longer than 200 chars) is "[UNK]".

`tokenize_with_offsets` also returns, for every token, the index of its first
character in `normalize(text)`; whole-word masking uses it to align tokens
with jieba's words.
"""
import collections
import json
import re
import unicodedata

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
UNK_TOKEN = "[UNK]"
MAX_INPUT_CHARS_PER_WORD = 200

class VocabError(ValueError):
    """The vocab file is unusable (missing special tokens, duplicates, ...)."""


def load_vocab(vocab_file):
    """Reads a vocab file, one token per line, into an OrderedDict token -> id.

    The id is the 0-based line number. Blank lines are an error (they would
    shift every later id); a duplicated token keeps its first id.
    """
    vocab = collections.OrderedDict()
    with open(vocab_file, "rb") as reader:
        data = reader.read()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for line_number, raw_line in enumerate(lines):
        try:
            line = raw_line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise VocabError(f"{vocab_file}:{line_number + 1}: not UTF-8 ({error})") from None
        # Only ASCII blanks are stripped: Google's vocab holds tokens such as
        # U+2028 that str.strip() would erase.
        token = line.rstrip("\r").strip(" \t")
        if not token:
            raise VocabError(
                f"{vocab_file}:{line_number + 1}: empty line in vocab file; every line "
                "must hold one token (ids are line numbers). Remove the blank line.")
        if token not in vocab:
            vocab[token] = line_number
    if not vocab:
        raise VocabError(f"{vocab_file}: vocab file is empty")
    return vocab


def load_tokenizer_json_vocab(tokenizer_file):
    """Reads the vocab of a transformers `tokenizer.json` (WordPiece model).

    Returns the same OrderedDict token -> id as `load_vocab`, in id order:
    `model.vocab`, then any `added_tokens` whose ids follow it. The ids must
    be exactly 0..V-1 (each once), as the lines of a vocab.txt are.
    """
    try:
        with open(tokenizer_file, "r", encoding="utf-8") as reader:
            data = json.load(reader)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise VocabError(f"{tokenizer_file}: cannot read tokenizer.json ({error})") from None
    model = data.get("model") if isinstance(data, dict) else None
    vocab = model.get("vocab") if isinstance(model, dict) else None
    if not isinstance(vocab, dict) or model.get("type", "WordPiece") != "WordPiece":
        kind = model.get("type") if isinstance(model, dict) else None
        raise VocabError(f"{tokenizer_file}: the tokenizer model is {kind!r}, not WordPiece; "
                         "only a BERT-style WordPiece vocab can become a vocab.txt")
    entries = dict(vocab)
    for added in data.get("added_tokens") or []:
        if added.get("content") not in entries and added.get("id", -1) >= len(vocab):
            entries[added["content"]] = added["id"]
    by_id = collections.OrderedDict()
    for token, token_id in sorted(entries.items(), key=lambda item: item[1]):
        if not isinstance(token_id, int) or token_id != len(by_id):
            raise VocabError(
                f"{tokenizer_file}: vocab ids must be 0..{len(entries) - 1}, each once; "
                f"token {token!r} has id {token_id!r} where {len(by_id)} was expected")
        by_id[token] = token_id
    if not by_id:
        raise VocabError(f"{tokenizer_file}: the WordPiece vocab is empty")
    return by_id


def check_special_tokens(vocab, vocab_file="<vocab>"):
    """Raises VocabError naming every missing one of [PAD] [UNK] [CLS] [SEP] [MASK]."""
    missing = [token for token in SPECIAL_TOKENS if token not in vocab]
    if missing:
        raise VocabError(
            f"{vocab_file}: vocab lacks the special token(s) {' '.join(missing)}; "
            f"a BERT vocab must contain all of {' '.join(SPECIAL_TOKENS)} "
            "(one per line, e.g. at the top of the file).")


def is_cjk_char(char):
    """True for a CJK ideograph (the blocks Google's BERT splits per character)."""
    cp = ord(char)
    return ((0x4E00 <= cp <= 0x9FFF) or (0x3400 <= cp <= 0x4DBF) or
            (0x20000 <= cp <= 0x2A6DF) or (0x2A700 <= cp <= 0x2B73F) or
            (0x2B740 <= cp <= 0x2B81F) or (0x2B820 <= cp <= 0x2CEAF) or
            (0xF900 <= cp <= 0xFAFF) or (0x2F800 <= cp <= 0x2FA1F))


def is_whitespace(char):
    """Space, tab, newline, carriage return and Unicode Zs characters."""
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def is_control(char):
    """Control/format characters (Cc, Cf) other than tab and line ends."""
    if char in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def is_punctuation(char):
    """ASCII non-alphanumeric printable characters and Unicode P* characters."""
    cp = ord(char)
    if (33 <= cp <= 47) or (58 <= cp <= 64) or (91 <= cp <= 96) or (123 <= cp <= 126):
        return True
    return unicodedata.category(char).startswith("P")


def full_width_to_half_width(char):
    """Maps full-width ASCII variants (U+FF01..U+FF5E) and U+3000 to ASCII."""
    cp = ord(char)
    if cp == 0x3000:
        return " "
    if 0xFF01 <= cp <= 0xFF5E:
        return chr(cp - 0xFEE0)
    return char


def strip_accents(text):
    """NFD-decomposes `text` and drops the combining marks (category Mn)."""
    return "".join(c for c in unicodedata.normalize("NFD", text)
                   if unicodedata.category(c) != "Mn")


class BasicTokenizer:
    """Cleaning, optional lower-casing/width folding, whitespace/punct/CJK split.

    Fast path: every distinct character is normalized and classified once and
    remembered in two str.translate tables; splitting is then a regex over
    the string of class letters (o = other, c = CJK, p = punctuation, " ").
    """

    _WORD = re.compile(r"o+|[cp]")

    def __init__(self, do_lower_case=True, full_width_to_half=False):
        self.do_lower_case = do_lower_case
        self.full_width_to_half = full_width_to_half
        self._normalize_table = {}  # ord(char) -> normalized str ("" drops it)
        self._class_table = {}  # ord(normalized char) -> class letter

    def _normalize_char(self, char):
        cp = ord(char)
        if cp == 0 or cp == 0xFFFD or is_control(char):
            return ""
        if is_whitespace(char):
            return " "
        text = full_width_to_half_width(char) if self.full_width_to_half else char
        if text != " " and self.do_lower_case:
            text = strip_accents(text.lower())
        return text

    @staticmethod
    def _classify(char):
        if char == " " or is_whitespace(char):
            return " "
        if is_cjk_char(char):
            return "c"
        if is_punctuation(char):
            return "p"
        return "o"

    def normalize_entry(self, cp):
        """normalize()'s replacement for chr(cp), filled into its table when missing."""
        text = self._normalize_table.get(cp)
        if text is None:
            text = self._normalize_table[cp] = self._normalize_char(chr(cp))
        return text

    def class_entry(self, cp):
        """The class letter of the normalized character chr(cp), filled when missing."""
        letter = self._class_table.get(cp)
        if letter is None:
            letter = self._class_table[cp] = self._classify(chr(cp))
        return letter

    def normalize(self, text):
        """Returns the cleaned/normalized text the tokens and offsets refer to."""
        table = self._normalize_table
        for char in set(text):
            if ord(char) not in table:
                table[ord(char)] = self._normalize_char(char)
        return text.translate(table)

    def _classes(self, normalized):
        table = self._class_table
        for char in set(normalized):
            if ord(char) not in table:
                table[ord(char)] = self._classify(char)
        return normalized.translate(table)

    def split_with_offsets(self, text):
        """Splits `text` into basic words.

        Returns (normalized_text, words, starts) where words[i] begins at
        normalized_text[starts[i]].
        """
        normalized = self.normalize(text)
        classes = self._classes(normalized)
        words = []
        starts = []
        for match in self._WORD.finditer(classes):
            begin, end = match.span()
            words.append(normalized[begin:end])
            starts.append(begin)
        return normalized, words, starts

    def tokenize(self, text):
        """Returns the basic words of `text` (no WordPiece)."""
        return self.split_with_offsets(text)[1]


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece over a fixed vocab."""

    def __init__(self, vocab, unk_token=UNK_TOKEN,
                 max_input_chars_per_word=MAX_INPUT_CHARS_PER_WORD):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word
        self._cache = {}

    def tokenize_word(self, word):
        """Splits one basic word into WordPieces (a list, [unk] if impossible)."""
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        if len(word) > self.max_input_chars_per_word:
            pieces = [self.unk_token]
        else:
            pieces = []
            start = 0
            while start < len(word):
                end = len(word)
                match = None
                while start < end:
                    candidate = word[start:end]
                    if start > 0:
                        candidate = "##" + candidate
                    if candidate in self.vocab:
                        match = candidate
                        break
                    end -= 1
                if match is None:
                    pieces = [self.unk_token]
                    break
                pieces.append(match)
                start = end
        if len(self._cache) < 500000:
            self._cache[word] = pieces
        return pieces

    def tokenize(self, text):
        """WordPiece-splits every whitespace-separated word of `text`."""
        tokens = []
        for word in text.split():
            tokens.extend(self.tokenize_word(word))
        return tokens


class FullTokenizer:
    """BasicTokenizer followed by WordpieceTokenizer, with id conversion."""

    def __init__(self, vocab_file, do_lower_case=True, full_width_to_half=False,
                 require_special_tokens=True):
        self.vocab_file = str(vocab_file)
        self.vocab = load_vocab(vocab_file)
        if require_special_tokens:
            check_special_tokens(self.vocab, self.vocab_file)
        self.inv_vocab = {token_id: token for token, token_id in self.vocab.items()}
        self.do_lower_case = do_lower_case
        self.basic_tokenizer = BasicTokenizer(do_lower_case, full_width_to_half)
        self.wordpiece_tokenizer = WordpieceTokenizer(self.vocab)

    def tokenize_with_offsets(self, text):
        """Returns (normalized_text, tokens, starts).

        starts[i] is the index in normalized_text of the first character of
        the basic word tokens[i] came from (a "##" piece shares its word's start;
        use the "##" prefix to tell pieces apart).
        """
        normalized, words, word_starts = self.basic_tokenizer.split_with_offsets(text)
        tokens = []
        starts = []
        vocab = self.vocab
        tokenize_word = self.wordpiece_tokenizer.tokenize_word
        for word, start in zip(words, word_starts):
            if len(word) == 1 and word in vocab:
                tokens.append(word)
                starts.append(start)
                continue
            pieces = tokenize_word(word)
            tokens.extend(pieces)
            starts.extend([start] * len(pieces))
        return normalized, tokens, starts

    def tokenize(self, text):
        """Returns the WordPiece tokens of `text` (list of str)."""
        return self.tokenize_with_offsets(text)[1]

    def convert_tokens_to_ids(self, tokens):
        """Maps tokens to ids; a token absent from the vocab maps to [UNK]'s id."""
        unk_id = self.vocab.get(UNK_TOKEN)
        ids = []
        for token in tokens:
            token_id = self.vocab.get(token, unk_id)
            if token_id is None:
                raise KeyError(f"token {token!r} not in vocab {self.vocab_file} and no [UNK]")
            ids.append(token_id)
        return ids

    def convert_ids_to_tokens(self, ids):
        """Maps ids back to tokens; raises KeyError naming an out-of-range id."""
        return ids_to_tokens(self.inv_vocab, ids, f"vocab {self.vocab_file} "
                                                  f"(size {len(self.vocab)})")


def ids_to_tokens(inv_vocab, ids, what):
    """[tokens] of `ids` through {id: token}; KeyError naming an id outside `what`."""
    tokens = []
    for token_id in ids:
        token = inv_vocab.get(int(token_id))
        if token is None:
            raise KeyError(f"id {token_id} is outside {what}")
        tokens.append(token)
    return tokens
