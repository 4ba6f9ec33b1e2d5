"""SentencePiece tokenization for --mode=xlnet --spm_model_file (an optional extra), and
for fine-tuning an XLNet whose vocab is a spiece.model (SpmFullTokenizer, at the end).

The text is prepared as zihangdai/xlnet prepares it before its sentencepiece
model (whitespace runs collapsed, `` and '' made ", NFKD without combining
marks, lower-cased with --do_lower_case), then encoded; a piece such as "19,"
(digits, then a comma) is encoded again as the digits, then "," (upstream's rule).

Whole words: the prepared text is segmented (jieba unless --segmenter says
otherwise) and each piece belongs to the word in which it begins (its first
byte); a piece that runs past the end of its word still belongs to that word,
pieces that begin at the same place (the bare "▁" before a piece) belong
together, and a space belongs to the word after it (so "▁" + "world" is one
unit, as is "▁world"). A piece opens a unit (`starts` 1, see masking.py) when its word is
not the previous piece's; so a masked unit is always whole pieces.
"""
import unicodedata

from data_gen.text.tokenization import VocabError, ids_to_tokens

SPECIAL_PIECES = {"sep": "<sep>", "cls": "<cls>", "eod": "<eod>", "mask": "<mask>",
                  "pad": "<pad>", "unk": "<unk>"}
INSTALL_HINT = ("pip install sentencepiece (or `make setup`, which installs the spm extra; "
                "in a checkout `pip install -e '.[spm]'`)")
_WORD_MARK = "\u2581"  # sentencepiece's "▁"


class SpmUnavailable(VocabError):
    """sentencepiece is not installed."""


def _sentencepiece():
    try:
        import sentencepiece  # pylint: disable=import-outside-toplevel
    except ImportError:
        raise SpmUnavailable("--spm_model_file needs the sentencepiece package: "
                             + INSTALL_HINT) from None
    return sentencepiece


def load_processor(model_file):
    """A sentencepiece.SentencePieceProcessor of `model_file`; VocabError when unusable."""
    sentencepiece = _sentencepiece()
    processor = sentencepiece.SentencePieceProcessor()
    try:
        processor.Load(model_file)
    except (OSError, RuntimeError) as error:
        raise VocabError(f"--spm_model_file={model_file}: not a sentencepiece model "
                         f"({error})") from None
    return processor


def special_ids(processor, model_file):
    """{name: id} of SPECIAL_PIECES; VocabError naming every missing piece."""
    ids, missing = {}, []
    for name, piece in SPECIAL_PIECES.items():
        piece_id = processor.PieceToId(piece)
        if processor.IdToPiece(piece_id) != piece:
            missing.append(piece)
        ids[name] = piece_id
    if missing:
        raise VocabError(f"--spm_model_file={model_file}: the model lacks the piece(s) "
                         f"{' '.join(missing)}; the permutation-LM models' spiece.model "
                         "files (upstream's and hfl's Chinese one) have all of "
                         f"{' '.join(SPECIAL_PIECES.values())}")
    return ids


def prepare_text(text, lower):
    """The text as upstream prepares it for its sentencepiece model (see module doc)."""
    text = " ".join(text.split()).replace("``", '"').replace("''", '"')
    text = "".join(char for char in unicodedata.normalize("NFKD", text)
                   if not unicodedata.combining(char))
    return text.lower() if lower else text


class SpmTokenizer:
    """tokenize(sentence, segmenter) -> (ids, starts) over a sentencepiece model."""

    def __init__(self, model_file, lower, whole_words=True):
        self.processor = load_processor(model_file)
        self.lower = lower
        self.whole_words = whole_words
        self.special = special_ids(self.processor, model_file)

    def _pieces(self, text):
        """[(id, first byte)] of the pieces of `text`, with upstream's digit-comma rule."""
        processor = self.processor
        try:
            encoded = processor.Encode(text, return_type="proto")
        except (TypeError, ValueError):  # sentencepiece < 0.2.1
            encoded = processor.Encode(text, out_type="immutable_proto")
        pieces = []
        for piece in encoded.pieces:
            name = piece.piece
            if len(name) > 1 and name[-1] == "," and name[-2].isdigit():
                again = processor.EncodeAsPieces(name[:-1].replace(_WORD_MARK, ""))
                if again and name[0] != _WORD_MARK and again[0][0] == _WORD_MARK:
                    again[0] = again[0][1:]
                pieces.extend((processor.PieceToId(part), piece.begin) for part in again if part)
                pieces.append((processor.PieceToId(","), piece.end - 1))
            else:
                pieces.append((piece.id, piece.begin))
        return pieces

    def tokenize(self, sentence, segmenter):
        """(ids, starts) of one sentence; starts as the module doc says (all 1 without
        whole words)."""
        text = prepare_text(sentence, self.lower)
        if not text:
            return [], []
        pieces = self._pieces(text)
        ids = [piece_id for piece_id, _ in pieces]
        if not self.whole_words or segmenter is None:
            return ids, [1] * len(ids)
        word_of_byte = []
        pending = 0  # bytes of spaces waiting for the word after them
        for index, word in enumerate(segmenter.words(text)):
            if word.isspace():
                pending += len(word.encode("utf-8"))
                continue
            word_of_byte.extend([index] * (pending + len(word.encode("utf-8"))))
            pending = 0
        word_of_byte.extend([len(word_of_byte) and word_of_byte[-1]] * pending)
        last = len(word_of_byte) - 1
        starts, previous = [], None
        for _, begin in pieces:
            word = word_of_byte[min(begin, last)]
            starts.append(0 if word == previous else 1)
            previous = word
        return ids, starts


# BERT's token names, which the fine-tuning task layer writes (finetune.tasks.layout),
# -> the SPECIAL_PIECES they stand for in a sentencepiece model.
TASK_TOKEN_PIECES = {"[CLS]": "cls", "[SEP]": "sep", "[PAD]": "pad", "[UNK]": "unk",
                     "[MASK]": "mask"}


class SpmFullTokenizer:
    """data_gen.text.tokenization.FullTokenizer's interface over a sentencepiece model, for
    fine-tuning (finetune.tasks) an XLNet whose vocab is a spiece.model.

    tokenize(text): the pieces of the text prepared as upstream prepares it (prepare_text,
      lower-cased with do_lower_case) and encoded alone, as zihangdai/xlnet's
      classifier_utils encodes text_a and text_b, so with sentencepiece's "▁" before it.
    tokenize_token(token): the pieces of one token of a longer text (NER: a CoNLL
      character), as inside that text: without the "▁" sentencepiece puts before a text
      (a bare "▁" piece is dropped; "▁x" becomes "x" when the model has that piece).
      Otherwise every character would come as "▁", "x" and be tagged on the "▁".
    convert_tokens_to_ids(tokens): pieces, and BERT's names [CLS] [SEP] [PAD] [UNK] [MASK]
      as <cls> <sep> <pad> <unk> <mask>; any other token -> <unk>'s id.
    convert_ids_to_tokens(ids): piece names. vocab: {piece: id} (every piece), inv_vocab.
    vocab_file: the model file (the fine-tuning feature cache hashes it). pad_id: <pad>'s id.
    """

    def __init__(self, model_file, do_lower_case=True):
        self.vocab_file = str(model_file)
        self._encoder = SpmTokenizer(self.vocab_file, do_lower_case, whole_words=False)
        processor = self._encoder.processor
        self.inv_vocab = {index: processor.IdToPiece(index)
                          for index in range(processor.GetPieceSize())}
        self.vocab = {piece: index for index, piece in self.inv_vocab.items()}
        special = self._encoder.special
        self._named = {name: special[key] for name, key in TASK_TOKEN_PIECES.items()}
        self.unk_id = special["unk"]
        self.pad_id = special["pad"]

    def tokenize(self, text):
        ids, _ = self._encoder.tokenize(text, None)
        return [self.inv_vocab[piece_id] for piece_id in ids]

    def tokenize_token(self, token):
        pieces = self.tokenize(token)
        if pieces and pieces[0].startswith(_WORD_MARK):
            rest = pieces[0][len(_WORD_MARK):]
            if not rest:
                pieces = pieces[1:] if len(pieces) > 1 else pieces
            elif rest in self.vocab:
                pieces[0] = rest
        return pieces

    def convert_tokens_to_ids(self, tokens):
        return [self._named.get(token, self.vocab.get(token, self.unk_id)) for token in tokens]

    def convert_ids_to_tokens(self, ids):
        return ids_to_tokens(self.inv_vocab, ids, f"sentencepiece model {self.vocab_file} "
                                                  f"({len(self.vocab)} pieces)")
