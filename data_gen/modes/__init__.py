"""The data modes (--mode) and their rooms: the one place data_gen dispatches on a mode.

MODES maps each mode's name to its DataMode (data_gen.modes.registry): the rest of
data_gen asks it for the mode's chunk processor, record features, sentence task,
default masking, flags and flag checks, instead of naming a mode. Rooms:
  mlm/    roberta, albert, bert: masked-LM instances and the masking recipes
          (wwm, ngram, span, macbert and its similar words)
  xlnet/  zihangdai/xlnet's permutation-LM records: streams, spans, features, flags

A new mode is a room offering registry.py's hooks plus its entry below.
"""
from data_gen.modes import mlm, xlnet
from data_gen.modes.registry import DataMode
from data_gen.modes.xlnet import xlnet_records
from data_gen.records.record_schema import FEATURES

MODES = {mode.name: mode for mode in (
    DataMode("roberta", "full-sentence packing, no sentence task", "none", "wwm", FEATURES,
             mlm, needs="documents that tokenize with --vocab_file"),
    DataMode("albert", "sentence-order prediction + n-gram masking + token_boundary", "sop",
             "ngram", FEATURES, mlm, token_boundary=True,
             needs="documents of 2+ sentences"),
    DataMode("bert", "next-sentence prediction", "nsp", "wwm", FEATURES, mlm,
             needs="documents of 2+ sentences"),
    DataMode("xlnet", "zihangdai/xlnet's permutation-LM records (reuse window, A, B; "
             "whole-word spans to predict)", "none", "xlnet_spans", xlnet_records.XLNET_FEATURES,
             xlnet,
             needs="a chunk's stream of at least max_seq_length - 2 tokens",
             tokenizer_flag="--spm_model_file"),
)}
ROOMS = (mlm, xlnet)
# GenerationConfig's bases: the flags each room adds to the shared ones.
FLAG_GROUPS = tuple(room.FLAGS for room in ROOMS)


def get(name):
    """The DataMode of --mode=`name`; ValueError listing the modes when unknown."""
    if name not in MODES:
        raise ValueError(f"--mode={name!r}: choose one of {', '.join(MODES)}")
    return MODES[name]


def mode_help():
    """--mode's help text, one clause per mode."""
    return "; ".join(f"{mode.name}: {mode.summary}" for mode in MODES.values()) + "."


def flag_checks(config):
    """(ok, message) of every room's flags for `config` (its mode's room active)."""
    active = get(config.mode).room
    return [check for room in ROOMS for check in room.flag_checks(config, room is active)]


def report_lines(account):
    """The rooms' own lines of the end-of-run report."""
    return [line for room in ROOMS for line in room.report_lines(account)]


def sentence_task(mode_name):
    """The sentence task of records of --mode=`mode_name`, or None for an unknown mode."""
    mode = MODES.get(mode_name)
    return mode.sentence_task if mode else None


def for_records(mode_name, record=None):
    """The DataMode of a file's records: by its sidecar's mode, else the mode whose
    features the first record has most of (the first mode on a tie)."""
    if mode_name in MODES:
        return MODES[mode_name]
    names = set(record or ())
    return max(MODES.values(), key=lambda mode: len(names & set(mode.required_names())))
