"""The files that travel with a checkpoint: its config, its vocab and its task.

A directory this toolkit writes a model to holds, beside the checkpoints,

    bert_config.json   the model config (run_pretraining, import_hf, fine-tuning)
    vocab.txt          the vocab the model was trained with (its ids are the rows of
                       the embedding table)
    spiece.model       instead of vocab.txt, a sentencepiece model (its pieces are the
                       ids; an XLNet imported from transformers with XLNetTokenizer)
    task.json          fine-tuning output only: the task and its labels
    best/              fine-tuning output only: the best checkpoint, with the three
                       files above copied in

so later stages need only `--init_checkpoint`:

    assets = resolve("out/finetune")     # -> out/finetune/best/model.ckpt-300 ...
    assets.config_file, assets.vocab_file, assets.task["labels"]
    assets.spm_model_file                # spiece.model beside it, or None

A `--bert_config_file` given on the command line wins; a `--vocab_file` given
must hold the same tokens as the checkpoint's vocab.txt (VocabMismatchError
otherwise). Checkpoints without these files (Google's releases, older runs)
work as before with the flags.
"""
import dataclasses
import hashlib
import json
import os

from common import file_utils
from common.model_configs import resolve_config_file
from common.cli_options import UserError

CONFIG_NAME = "bert_config.json"
VOCAB_NAME = "vocab.txt"
SPM_NAME = "spiece.model"
TASK_NAME = "task.json"
BEST_DIR = "best"
TASK_FORMAT_VERSION = 1
TASKS = ("classification", "pair", "ner")
TAG_SCHEMES = (None, "BIO", "BIOES", "BMES")
SEQUENCE_HEAD, TOKEN_HEAD = "sequence", "token"


class AssetError(UserError):
    """A checkpoint, config, vocab or task file that cannot be found or used."""


class VocabMismatchError(AssetError):
    """A vocab given by flag is not the one the checkpoint was trained with."""


@dataclasses.dataclass
class CheckpointAssets:
    """What `resolve` found. Sources are "flag", "checkpoint" or "none"."""
    checkpoint: str      # resolved checkpoint prefix, or None (no --init_checkpoint)
    config_file: str     # path or None
    vocab_file: str      # path or None
    task: dict           # parsed task.json, or None
    config_source: str
    vocab_source: str
    task_file: str = None  # where task was read from
    spm_model_file: str = None  # spiece.model beside the checkpoint, or None

    @property
    def labels(self):
        """task.json's labels, or None."""
        return list(self.task["labels"]) if self.task else None

    def tokenizer_length_limit(self, model_limit):
        """The input length an exported tokenizer truncates to (its model_max_length): a
        fine-tuned model's task.json max_seq_length, the length it was trained and scores
        at; else `model_limit` (a pretrained model's position limit)."""
        return (self.task or {}).get("max_seq_length") or model_limit


# ---- small file helpers (local paths, or gs:// through tf.io.gfile) --------------------------

def _gfile():
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    return tf.io.gfile


def _isdir(path):
    return _gfile().isdir(path) if file_utils.is_remote(path) else os.path.isdir(path)


def _read_bytes(path):
    with file_utils.open_input(path, "rb") as reader:
        return reader.read()


def _write_bytes(path, data):
    if file_utils.is_remote(path):
        with _gfile().GFile(path, "wb") as writer:
            writer.write(data)
        return
    with file_utils.AtomicFile(path, make_dirs=True) as atomic:
        atomic.handle.write(data)


def _join(directory, name):
    return directory.rstrip("/") + "/" + name if file_utils.is_remote(directory) \
        else os.path.join(directory, name)


def _normal(path):
    path = str(path)
    if file_utils.is_remote(path):
        return path.rstrip("/")
    return os.path.abspath(os.path.expanduser(path))


def _dirname(path):
    return path.rsplit("/", 1)[0] if file_utils.is_remote(path) else os.path.dirname(path)


# ---- checkpoints ------------------------------------------------------------------------------

def _latest_checkpoint(directory):
    import tensorflow.compat.v1 as tf  # pylint: disable=import-outside-toplevel
    return tf.train.latest_checkpoint(directory)


def is_finetune_dir(directory):
    """True for a fine-tuning output directory: task.json and best/ holding a checkpoint."""
    best = _join(directory, BEST_DIR)
    return (file_utils.input_exists(_join(directory, TASK_NAME)) and _isdir(best)
            and _latest_checkpoint(best) is not None)


TRANSFORMERS_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                        "pytorch_model.bin.index.json")


def is_transformers_dir(directory):
    """True for a transformers model directory: config.json beside its weights."""
    return file_utils.input_exists(_join(directory, "config.json")) and any(
        file_utils.input_exists(_join(directory, name)) for name in TRANSFORMERS_WEIGHTS)


def resolve_checkpoint_dir(init_checkpoint, flag="--init_checkpoint"):
    """The checkpoint prefix `init_checkpoint` names.

    A prefix stays as it is (`.index`/`.data-*` suffixes are dropped); a
    directory gives its latest checkpoint, a fine-tuning output directory the
    checkpoint in its best/. AssetError when there is none.
    """
    path = str(init_checkpoint)
    if not file_utils.is_remote(path):
        path = os.path.expanduser(path)
    if _isdir(path):
        if is_finetune_dir(path):
            return _latest_checkpoint(_join(path, BEST_DIR))
        latest = _latest_checkpoint(path)
        if latest is None and is_transformers_dir(path):
            raise AssetError(
                "%s=%s is a transformers model (config.json and its weights), not a TF "
                "checkpoint: import it first, python -m pretrain.interop.import_hf --model_dir=%s "
                "--output_dir=runs/imported, then pass %s=runs/imported"
                % (flag, path, path, flag))
        if latest is None:
            raise AssetError(
                "%s=%s: no checkpoint found in this directory (no `checkpoint` index file); "
                "pass a checkpoint prefix, e.g. %s=%s/model.ckpt-1000"
                % (flag, path, flag, path.rstrip("/")))
        return latest
    if file_utils.input_exists(path + ".index"):
        return path
    for suffix in (".index", ".meta", ".data-00000-of-00001"):
        if path.endswith(suffix) and file_utils.input_exists(path[:-len(suffix)] + ".index"):
            return path[:-len(suffix)]
    raise AssetError("%s=%s: no checkpoint found (expected %s.index, or a directory holding a "
                     "`checkpoint` file); check the path" % (flag, path, path))


# ---- vocab ------------------------------------------------------------------------------------

def read_tokens(path, flag=None):
    """The token list of a vocab file: one per line, UTF-8 (a BOM, "\\r" and the
    trailing newline do not count; ASCII blanks around a token are stripped)."""
    try:
        data = _read_bytes(path)
    except OSError as err:
        raise AssetError("%scannot read vocab %s: %s" % (
            flag + ": " if flag else "", path, err.strerror or err)) from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    try:
        return [line.decode("utf-8").rstrip("\r").strip(" \t") for line in lines]
    except UnicodeDecodeError as err:
        raise AssetError("%svocab %s is not UTF-8 (%s)" % (
            flag + ": " if flag else "", path, err)) from None


def vocab_sha256(path):
    """Hex SHA-256 of a vocab file's bytes (local or gs://), as data_gen's sidecar records it."""
    try:
        return hashlib.sha256(_read_bytes(path)).hexdigest()
    except OSError as err:
        raise AssetError("cannot read vocab %s: %s" % (path, err.strerror or err)) from None


def checkpoint_fingerprint(checkpoint):
    """sha256 of a checkpoint's .index file (it holds every tensor's checksum), or None.

    Two checkpoints under one path with other weights (a pretraining redone into
    the same folder) get different fingerprints.
    """
    index = f"{checkpoint}.index"
    if not checkpoint or not _gfile().exists(index):
        return None
    return hashlib.sha256(_read_bytes(index)).hexdigest()


def first_difference(tokens_a, tokens_b):
    """1-based line of the first difference of two token lists, or None if equal."""
    for index, (token_a, token_b) in enumerate(zip(tokens_a, tokens_b)):
        if token_a != token_b:
            return index + 1
    if len(tokens_a) != len(tokens_b):
        return min(len(tokens_a), len(tokens_b)) + 1
    return None


def same_vocab(path_a, path_b):
    """(True, None) when both files list the same tokens in the same order, else
    (False, first differing 1-based line)."""
    line = first_difference(read_tokens(path_a), read_tokens(path_b))
    return line is None, line


def describe_difference(tokens_a, tokens_b, line):
    """`line N ('x' vs 'y')` for messages; a list that ends first shows as its end."""
    shown = [repr(tokens[line - 1]) if line <= len(tokens) else "end of file after %d lines"
             % len(tokens) for tokens in (tokens_a, tokens_b)]
    return "line %d (%s vs %s)" % (line, shown[0], shown[1])


# ---- task.json --------------------------------------------------------------------------------

def check_task(task, source):
    """The task dict if it is a valid task.json, else AssetError naming `source`."""
    def refuse(what):
        raise AssetError("%s: %s; it is written by fine-tuning (fix or delete it)" % (source, what))
    if not isinstance(task, dict):
        refuse("must hold a JSON object")
    if task.get("format_version", TASK_FORMAT_VERSION) != TASK_FORMAT_VERSION:
        refuse("format_version %r is not %d" % (task.get("format_version"), TASK_FORMAT_VERSION))
    if task.get("task") not in TASKS:
        refuse("task %r is not one of %s" % (task.get("task"), ", ".join(TASKS)))
    labels = task.get("labels")
    if (not isinstance(labels, list) or not labels
            or not all(isinstance(label, str) and label for label in labels)):
        refuse("labels must be a non-empty list of label names (strings) in id order")
    if len(set(labels)) != len(labels):
        refuse("labels %s name a class twice" % labels)
    if task.get("tag_scheme") not in TAG_SCHEMES:
        refuse("tag_scheme %r is not one of null, BIO, BIOES, BMES" % task.get("tag_scheme"))
    length = task.get("max_seq_length")
    if length is not None and (not isinstance(length, int) or isinstance(length, bool)
                               or length < 2):
        refuse("max_seq_length %r is not an integer of at least 2" % (length,))
    return task


def read_task(path):
    """The checked task.json at `path`."""
    try:
        task = json.loads(_read_bytes(path).decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise AssetError("cannot read %s: %s" % (path, err)) from None
    return check_task(task, path)


def task_head(task):
    """"sequence" (classifier/*, on the pooled output) or "token" (token_classifier/*)."""
    return TOKEN_HEAD if task["task"] == "ner" else SEQUENCE_HEAD


# ---- resolve / write --------------------------------------------------------------------------

def _find(directories, name):
    for directory in directories:
        path = _join(directory, name)
        if file_utils.input_exists(path):
            return path
    return None


def resolve(init_checkpoint=None, vocab_file=None, bert_config_file=None, *,
            checkpoint_flag="--init_checkpoint", vocab_flag="--vocab_file",
            config_flag="--bert_config_file"):
    """CheckpointAssets of a checkpoint and the flags that may name its files.

    bert_config.json, vocab.txt, task.json and spiece.model are looked for beside the
    resolved checkpoint, then in the directory `init_checkpoint` names. A
    given config flag (a path or a shipped config's name, common.model_configs) wins; a given vocab flag must list the checkpoint's
    tokens (VocabMismatchError naming both files and the first differing line).
    """
    checkpoint, directories = None, []
    if init_checkpoint:
        checkpoint = resolve_checkpoint_dir(init_checkpoint, checkpoint_flag)
        directories.append(_dirname(checkpoint))
        given = _normal(init_checkpoint)
        if _isdir(given) and given != _normal(directories[0]):
            directories.append(given)
    config_file, config_source = resolve_config_file(bert_config_file), "flag"
    if not config_file:
        config_file = _find(directories, CONFIG_NAME)
        config_source = "checkpoint" if config_file else "none"
    own_vocab = _find(directories, VOCAB_NAME)
    if vocab_file:
        if own_vocab:
            tokens, own_tokens = read_tokens(vocab_file, vocab_flag), read_tokens(own_vocab)
            line = first_difference(tokens, own_tokens)
            if line is not None:
                raise VocabMismatchError(
                    "%s=%s is not the vocab checkpoint %s was trained with: it differs from %s "
                    "at %s. Drop %s to use the checkpoint's vocab, or pass the vocab it was "
                    "trained with" % (vocab_flag, vocab_file, checkpoint, own_vocab,
                                      describe_difference(tokens, own_tokens, line),
                                      vocab_flag))
        vocab_source = "flag"
    else:
        vocab_file = own_vocab
        vocab_source = "checkpoint" if own_vocab else "none"
    task_path = _find(directories, TASK_NAME)
    task = read_task(task_path) if task_path else None
    return CheckpointAssets(checkpoint, config_file, vocab_file, task, config_source,
                            vocab_source, task_path, _find(directories, SPM_NAME))


def missing_file_error(what, name, flag, init_checkpoint, checkpoint):
    """AssetError for a config/vocab found neither by flag nor beside the checkpoint."""
    if not init_checkpoint:
        return AssetError("%s is required (no --init_checkpoint to take the %s from)"
                          % (flag, what))
    places = [_dirname(checkpoint)]
    if _isdir(_normal(init_checkpoint)) and _normal(init_checkpoint) != _normal(places[0]):
        places.append(_normal(init_checkpoint))
    return AssetError("no %s: --init_checkpoint=%s has no %s beside it (looked in %s); pass %s"
                      % (what, init_checkpoint, name, ", ".join(places), flag))


def head_of_checkpoint(task, shapes, checkpoint, task_file=None):
    """(head variable scope "classifier" | "token_classifier" | None, number of labels).

    shapes: {name: shape} of the checkpoint. With a task (task.json), its head
    must be in the checkpoint with one output per label; without one, the head
    the checkpoint holds (at most one) is taken.
    """
    present = [scope for scope in ("classifier", "token_classifier")
               if scope + "/output_weights" in shapes]
    if task is None:
        if len(present) > 1:
            raise AssetError("checkpoint %s holds both classifier/* and token_classifier/*; "
                             "export a checkpoint with one head" % checkpoint)
        head = present[0] if present else None
        return head, (shapes[head + "/output_weights"][0] if head else 0)
    head = "token_classifier" if task_head(task) == TOKEN_HEAD else "classifier"
    source = task_file or TASK_NAME
    if head not in present:
        raise AssetError("%s says task %r, but checkpoint %s has no %s/output_weights; pass "
                         "the checkpoint fine-tuning wrote beside this task.json"
                         % (source, task["task"], checkpoint, head))
    outputs = shapes[head + "/output_weights"][0]
    if outputs != len(task["labels"]):
        raise AssetError("%s lists %d labels but the head %s/output_weights of checkpoint %s "
                         "has %d outputs; pass the checkpoint fine-tuning wrote beside this "
                         "task.json" % (source, len(task["labels"]), head, checkpoint, outputs))
    return head, outputs


def _same_file(path_a, path_b):
    try:
        return os.path.samefile(path_a, path_b)
    except OSError:
        return False


def write_assets(output_dir, config_file=None, vocab_file=None, task=None, spm_model_file=None):
    """Copies config_file -> OUT/bert_config.json, vocab_file -> OUT/vocab.txt and
    spm_model_file -> OUT/spiece.model (bytes unchanged) and writes `task` ->
    OUT/task.json, each atomically. Returns the paths written."""
    written = []
    for source, name in ((config_file, CONFIG_NAME), (vocab_file, VOCAB_NAME),
                         (spm_model_file, SPM_NAME)):
        if source:
            target = _join(output_dir, name)
            if not _same_file(source, target):
                _write_bytes(target, _read_bytes(source))
            written.append(target)
    if task is not None:
        target = _join(output_dir, TASK_NAME)
        check_task(task, "task for %s" % target)
        text = json.dumps(task, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        _write_bytes(target, text.encode("utf-8"))
        written.append(target)
    return written
