"""The files of a transformers model directory, read and written without torch.

Reading: `config.json`; the weights from `model.safetensors`, sharded
safetensors (`model.safetensors.index.json`), or `pytorch_model.bin` (also
sharded) when torch is importable; the vocab from `vocab.txt` or
`tokenizer.json` (an XLNet's also from `spiece.model`, whose pieces are read
from its protobuf here, without sentencepiece). Safetensors files are parsed here (an 8-byte header
length, a JSON header, raw little-endian data) because safetensors' numpy API
cannot return bfloat16 tensors; those come back as `ml_dtypes.bfloat16`
arrays (ml_dtypes ships with TensorFlow).

Writing: `model.safetensors` (metadata {"format": "pt"}), `vocab.txt`,
`tokenizer_config.json` and `special_tokens_map.json` naming BertTokenizer,
so `AutoTokenizer.from_pretrained` gives a WordPiece tokenizer for BERT and
ALBERT configs alike. `output_directory()` makes a directory appear complete
or not at all.
"""
import collections
import contextlib
import importlib.util
import glob
import json
import os
import shutil
import struct
import uuid

import numpy as np

from data_gen.text.tokenization import (SPECIAL_TOKENS, VocabError, load_tokenizer_json_vocab,
                                   load_vocab)
from common.cli_options import UserError

CONFIG = "config.json"
SAFETENSORS = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
TORCH_BIN = "pytorch_model.bin"
TORCH_BIN_INDEX = "pytorch_model.bin.index.json"
WEIGHT_FILES = (SAFETENSORS, SAFETENSORS_INDEX, TORCH_BIN, TORCH_BIN_INDEX)  # first found is read
VOCAB = "vocab.txt"
SPIECE = "spiece.model"  # a sentencepiece model (XLNetTokenizer)
TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
SPECIAL_TOKENS_MAP = "special_tokens_map.json"
_SPECIAL_TOKEN_KEYS = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]",
                       "sep_token": "[SEP]", "mask_token": "[MASK]"}
_SAFETENSORS_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16,
                       "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
                       "U8": np.uint8, "BOOL": np.bool_}


def read_json(path, what):
    """Parsed JSON object of `path`; UserError naming the file otherwise."""
    try:
        with open(path, "r", encoding="utf-8") as reader:
            data = json.load(reader)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError("cannot read %s %s: %s" % (what, path, err)) from None
    if not isinstance(data, dict):
        raise UserError("%s %s must hold a JSON object" % (what, path))
    return data


def read_config(model_dir):
    """The parsed config.json of a model directory."""
    if not os.path.isdir(model_dir):
        raise UserError("--model_dir %s does not exist or is not a directory" % model_dir)
    path = os.path.join(model_dir, CONFIG)
    if not os.path.isfile(path):
        if glob.glob(os.path.join(model_dir, "*.index")) or glob.glob(
                os.path.join(model_dir, "best", "*.index")):
            raise UserError(
                "%s is a TF checkpoint, not a transformers model: pass it as it is to "
                "--init_checkpoint (run_pretraining, run_finetune, compare), or make a "
                "transformers model of it with python -m pretrain.interop.export_hf "
                "--init_checkpoint=%s --output_dir=hf/model" % (model_dir, model_dir))
        raise UserError("%s has no %s; pass the directory a transformers model was saved to "
                        "(save_pretrained / a hub snapshot)" % (model_dir, CONFIG))
    return read_json(path, "model config")


def read_safetensors(path):
    """{name: ndarray} of one .safetensors file (bfloat16 as ml_dtypes.bfloat16)."""
    try:
        with open(path, "rb") as reader:
            (header_size,) = struct.unpack("<Q", reader.read(8))
            header = json.loads(reader.read(header_size))
            data = reader.read()
    except (OSError, struct.error, ValueError) as err:
        raise UserError("%s is not a readable safetensors file: %s" % (path, err)) from None
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = info.get("dtype")
        if dtype == "BF16":
            import ml_dtypes  # pylint: disable=import-outside-toplevel
            numpy_dtype = np.dtype(ml_dtypes.bfloat16)
        elif dtype in _SAFETENSORS_DTYPES:
            numpy_dtype = np.dtype(_SAFETENSORS_DTYPES[dtype]).newbyteorder("<")
        else:
            raise UserError("%s: tensor %s has dtype %s, which cannot be read"
                            % (path, name, dtype))
        try:
            begin, end = info["data_offsets"]
            array = np.frombuffer(data, dtype=numpy_dtype, offset=begin,
                                  count=(end - begin) // numpy_dtype.itemsize)
            tensors[name] = array.reshape(info["shape"])
        except (KeyError, TypeError, ValueError) as err:
            raise UserError("%s: tensor %s is damaged (%s)" % (path, name, err)) from None
    return tensors


def _read_torch_bin(path):
    import torch  # pylint: disable=import-outside-toplevel
    state = torch.load(path, map_location="cpu", weights_only=True)
    tensors = {}
    for name, tensor in state.items():
        if tensor.dtype == torch.bfloat16:
            import ml_dtypes  # pylint: disable=import-outside-toplevel
            tensors[name] = tensor.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        else:
            tensors[name] = tensor.numpy()
    return tensors


def _read_sharded(model_dir, index_name, read_file):
    index = read_json(os.path.join(model_dir, index_name), "weights index")
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict):
        raise UserError("%s has no weight_map" % os.path.join(model_dir, index_name))
    tensors = {}
    for shard in sorted(set(weight_map.values())):
        path = os.path.join(model_dir, shard)
        if not os.path.isfile(path):
            raise UserError("%s lists shard %s, which is missing" % (index_name, path))
        tensors.update(read_file(path))
    return tensors


def find_weights(model_dir):
    """Name of the weights file read_weights will use; UserError when there is none,
    or when it is a PyTorch file and torch is not installed."""
    for name in WEIGHT_FILES:
        if os.path.isfile(os.path.join(model_dir, name)):
            if name in (TORCH_BIN, TORCH_BIN_INDEX) and importlib.util.find_spec("torch") is None:
                raise UserError(
                    "%s is a PyTorch file and reading it needs torch, which is not installed. "
                    "Install torch in this environment, or re-save the model with safetensors "
                    "where torch is: AutoModel.from_pretrained(DIR).save_pretrained(DIR, "
                    "safe_serialization=True)" % os.path.join(model_dir, name))
            return name
    raise UserError("%s holds no weights: looked for %s" % (model_dir, ", ".join(WEIGHT_FILES)))


def read_weights(model_dir):
    """(state dict {key: ndarray}, name of the weights file) of a transformers model directory."""
    name = find_weights(model_dir)
    if name == SAFETENSORS:
        return read_safetensors(os.path.join(model_dir, name)), name
    if name == SAFETENSORS_INDEX:
        return _read_sharded(model_dir, name, read_safetensors), name
    if name == TORCH_BIN:
        return _read_torch_bin(os.path.join(model_dir, name)), name
    return _read_sharded(model_dir, name, _read_torch_bin), name


def read_vocab(model_dir, spm=False):
    """(OrderedDict token -> id, source path) from vocab.txt, else (with spm) the pieces
    of spiece.model, else tokenizer.json."""
    try:
        path = os.path.join(model_dir, VOCAB)
        if os.path.isfile(path):
            return load_vocab(path), path
        path = os.path.join(model_dir, SPIECE)
        if spm and os.path.isfile(path):
            return read_spm_pieces(path), path
        path = os.path.join(model_dir, TOKENIZER_JSON)
        if os.path.isfile(path):
            return load_tokenizer_json_vocab(path), path
    except VocabError as err:
        raise UserError(str(err)) from None
    raise UserError("%s has neither %s nor %s; the vocab is needed to use the model"
                    % (model_dir, VOCAB + (", " + SPIECE if spm else ""), TOKENIZER_JSON))


def _proto_fields(data, path):
    """(field number, value) of a protobuf message's bytes: ints for varints and fixed
    widths, bytes for length-delimited fields."""
    position = 0

    def varint():
        nonlocal position
        value, shift = 0, 0
        while True:
            if position >= len(data) or shift > 63:
                raise UserError("%s is not a sentencepiece model (bad protobuf)" % path)
            byte = data[position]
            position += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value
    while position < len(data):
        key = varint()
        wire, width = key & 7, {1: 8, 5: 4}.get(key & 7)
        if wire == 0:
            value = varint()
        elif wire == 2:
            width = varint()
        elif width is None:
            raise UserError("%s is not a sentencepiece model (protobuf wire type %d)"
                            % (path, wire))
        if wire != 0:
            if position + width > len(data):
                raise UserError("%s is not a sentencepiece model (truncated)" % path)
            value = data[position:position + width]
            position += width
        yield key >> 3, value


def read_spm_pieces(path):
    """OrderedDict piece -> id of a sentencepiece model file (ModelProto field 1, the
    pieces in id order, each with its piece string as field 1)."""
    try:
        with open(path, "rb") as reader:
            data = reader.read()
    except OSError as err:
        raise UserError("cannot read %s: %s" % (path, err.strerror or err)) from None
    pieces = collections.OrderedDict()
    for field, value in _proto_fields(data, path):
        if field == 1 and isinstance(value, bytes):
            text = [part for number, part in _proto_fields(value, path)
                    if number == 1 and isinstance(part, bytes)]
            try:
                piece = text[0].decode("utf-8") if text else ""
            except UnicodeDecodeError:
                raise UserError("%s is not a sentencepiece model (a piece is not UTF-8)"
                                % path) from None
            if piece in pieces:
                raise UserError("%s lists the piece %r twice" % (path, piece))
            pieces[piece] = len(pieces)
    if not pieces:
        raise UserError("%s is not a sentencepiece model: it lists no pieces" % path)
    return pieces


def read_do_lower_case(model_dir):
    """do_lower_case of tokenizer_config.json, or None when not stated."""
    path = os.path.join(model_dir, TOKENIZER_CONFIG)
    if not os.path.isfile(path):
        return None
    return read_json(path, "tokenizer config").get("do_lower_case")


def write_vocab(vocab, path):
    """Writes the tokens of an id-ordered vocab (ids 0..V-1) one per line."""
    for token in vocab:
        if not token or token != token.strip(" \t") or "\n" in token or "\r" in token:
            raise UserError("vocab token %r cannot be a line of a vocab.txt" % token)
    with open(path, "w", encoding="utf-8", newline="\n") as writer:
        for token in vocab:
            writer.write(token + "\n")


def write_safetensors(state_dict, path):
    """model.safetensors with the metadata transformers expects of PyTorch weights."""
    from safetensors.numpy import save_file  # pylint: disable=import-outside-toplevel
    save_file({key: np.ascontiguousarray(value) for key, value in state_dict.items()}, path,
              metadata={"format": "pt"})
    umask = os.umask(0)  # save_file creates the file 0600; give it the usual permissions
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def write_tokenizer_files(directory, vocab_file, do_lower_case, model_max_length):
    """vocab.txt (copied), tokenizer_config.json and special_tokens_map.json for BertTokenizer."""
    try:
        vocab = load_vocab(vocab_file)
    except (OSError, VocabError) as err:
        raise UserError("--vocab_file: %s" % err) from None
    missing = [token for token in SPECIAL_TOKENS if token not in vocab]
    if missing:
        raise UserError("--vocab_file %s lacks %s" % (vocab_file, " ".join(missing)))
    shutil.copyfile(vocab_file, os.path.join(directory, VOCAB))
    tokenizer_config = dict(_SPECIAL_TOKEN_KEYS, tokenizer_class="BertTokenizer",
                            do_lower_case=bool(do_lower_case), do_basic_tokenize=True,
                            tokenize_chinese_chars=True, strip_accents=None,
                            model_max_length=model_max_length)
    write_json(os.path.join(directory, TOKENIZER_CONFIG), tokenizer_config)
    write_json(os.path.join(directory, SPECIAL_TOKENS_MAP), _SPECIAL_TOKEN_KEYS)
    return vocab


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as writer:
        json.dump(data, writer, indent=2, ensure_ascii=False, sort_keys=True)
        writer.write("\n")


def check_output_dir(output_dir, overwrite=False):
    """Absolute output_dir; UserError if it is a file, or non-empty without overwrite."""
    output_dir = os.path.abspath(os.path.expanduser(str(output_dir)))
    if os.path.exists(output_dir):
        if not os.path.isdir(output_dir):
            raise UserError("--output_dir %s exists and is not a directory" % output_dir)
        if os.listdir(output_dir) and not overwrite:
            raise UserError("--output_dir %s exists and is not empty; pass --overwrite to "
                            "replace it" % output_dir)
    return output_dir


@contextlib.contextmanager
def output_directory(output_dir, overwrite=False):
    """Yields a hidden temporary sibling of `output_dir` to fill, renamed at the end.

    A non-empty existing output_dir is refused unless overwrite; it is
    replaced only once the new one is complete. On error nothing is left.
    """
    output_dir = check_output_dir(output_dir, overwrite)
    parent, name = os.path.split(output_dir)
    temporary = os.path.join(parent, ".%s.tmp-%d-%s" % (name, os.getpid(), uuid.uuid4().hex[:8]))
    try:
        os.makedirs(temporary)
    except OSError as err:
        raise UserError("cannot write --output_dir %s: %s" % (output_dir, err)) from None
    try:
        yield temporary
        if os.path.exists(output_dir):
            previous = temporary + ".previous"
            os.rename(output_dir, previous)
            os.rename(temporary, output_dir)
            shutil.rmtree(previous, ignore_errors=True)
        else:
            os.rename(temporary, output_dir)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
