"""SentencePiece tokenization for --mode=xlnet --spm_model_file (an optional extra).

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

from data_gen.tokenization import VocabError

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
                         f"{' '.join(missing)}; zihangdai/xlnet's models (and "
                         "hfl/chinese-xlnet-base's spiece.model) have all of "
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
