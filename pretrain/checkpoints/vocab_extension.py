"""Adds a corpus's missing characters to a checkpoint's vocab, before continuing on that corpus.

    python -m pretrain.checkpoints.vocab_surgery --init_checkpoint=runs/roberta \
        --extend_from_corpus='domain/*.txt' --output_dir=runs/roberta_extended

The characters of the corpus that the checkpoint's vocab maps to [UNK]
(data_gen.text.vocab_gaps.unknown_characters), seen at least --min_count times, most frequent
first, take the vocab's free `[unusedN]` lines in id order (Google's Chinese vocab has 99),
never a line a data mode reserves (RESERVED: [unused1] is XLNet's default --eod_token).
Those ids keep their rows, which no text used, so the model's outputs on text without the
new characters are unchanged. When the free lines run out, the rest are appended: the
word-embedding table `bert/embeddings/word_embeddings` [V, E] gains rows set to the mean of
its existing rows, the masked-LM output bias `cls/predictions/output_bias` [V] gains the
mean of its entries (a new token starts as an average one), and the config's vocab_size
grows. OUTPUT_DIR gets the checkpoint (weights only: optimizer slots and global_step are
dropped, as --init_checkpoint loads weights only), vocab.txt, bert_config.json and
vocab_extension.json (what was added where). BERT and ALBERT checkpoints; ELECTRA's tied
generator and discriminator tables and XLNet's are refused.
"""
import glob
import json
import os
import re
import shutil

import numpy as np

from common.cli_options import UserError
from pretrain.checkpoints import checkpoint_assets, checkpoint_io
from pretrain.models import registry

RESERVED = ("[unused1]",)
UNUSED = re.compile(r"^\[unused\d+\]$")
EMBEDDINGS = "bert/embeddings/word_embeddings"
OUTPUT_BIAS = "cls/predictions/output_bias"
SLOT_SUFFIXES = ("/adam_m", "/adam_v", "/m", "/v")


def corpus_lines(pattern):
    """Lines of the files of a comma-separated glob (UTF-8); UserError when none matches."""
    paths = sorted(path for part in pattern.split(",") for path in glob.glob(part.strip()))
    if not paths:
        raise UserError(f"--extend_from_corpus={pattern} matches no file")
    for path in paths:
        with open(path, encoding="utf-8") as reader:
            yield from reader


def plan(tokens, counts, min_count):
    """(slot ids filled, appended characters, {char: id}) for the new characters."""
    new = [char for char, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
           if count >= min_count]
    free = [index for index, token in enumerate(tokens)
            if token is not None and UNUSED.match(token) and token not in RESERVED]
    placed = dict(zip(new, free))
    appended = new[len(free):]
    ids = dict(placed)
    ids.update({char: len(tokens) + offset for offset, char in enumerate(appended)})
    return free[:len(placed)], appended, ids


def extend(init_checkpoint, pattern, output_dir, min_count=1, do_lower_case=True,
           overwrite=False, log_fn=print):
    """Writes the extended checkpoint (module docstring); returns vocab_extension.json's dict."""
    from data_gen.text import tokenization
    from data_gen.text import vocab_gaps  # pylint: disable=import-outside-toplevel
    assets = checkpoint_assets.resolve(init_checkpoint)
    if not assets.vocab_file or not assets.config_file:
        raise UserError(f"--init_checkpoint={init_checkpoint}: needs its vocab.txt and "
                        "bert_config.json beside it (import_hf and run_pretraining write them)")
    with open(assets.config_file, encoding="utf-8") as reader:
        config_dict = json.load(reader)
    family = registry.family(config_dict.get("model_type") or "bert")
    if family.vocab_extension_refusal:
        raise UserError(f"--extend_from_corpus does not extend {family.model_type} vocabs; "
                        f"{assets.config_file} is a {family.model_type} model "
                        f"({family.vocab_extension_refusal}; add the characters when making "
                        "its own vocab instead)")
    if os.path.isdir(output_dir) and os.listdir(output_dir) and not overwrite:
        raise UserError(f"--output_dir={output_dir} is not empty; pass --overwrite or choose "
                        "another folder")
    tokens = checkpoint_assets.read_tokens(assets.vocab_file)
    tokenizer = tokenization.FullTokenizer(assets.vocab_file, do_lower_case=do_lower_case)
    counts = vocab_gaps.unknown_characters(corpus_lines(pattern), tokenizer)
    slots, appended, ids = plan(tokens, counts, min_count)
    weights = {name: value for name, value in checkpoint_io.read_checkpoint(
        assets.checkpoint).items()
        if not name.endswith(SLOT_SUFFIXES) and name != "global_step"}
    if appended:
        for name in (EMBEDDINGS, OUTPUT_BIAS):
            if name not in weights:
                raise UserError(f"{assets.checkpoint} has no {name}; cannot append "
                                f"{len(appended)} characters past the free [unused] lines")
            table = weights[name]
            rows = np.repeat(table.mean(axis=0, keepdims=True), len(appended), axis=0)
            weights[name] = np.concatenate([table, rows.astype(table.dtype)])
    new_tokens = list(tokens)
    for char, index in ids.items():
        if index < len(new_tokens):
            new_tokens[index] = char
    new_tokens += appended
    config_dict["vocab_size"] = max(int(config_dict["vocab_size"]), len(new_tokens))
    staging = output_dir.rstrip("/") + ".partial"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    checkpoint_io.write_checkpoint(weights, os.path.join(staging, "model.ckpt"),
                                   write_state=True)
    report = {"init_checkpoint": assets.checkpoint, "corpus": pattern, "min_count": min_count,
              "unknown_characters": sum(counts.values()),
              "added": [[char, ids[char], counts[char]] for char in ids],
              "slots_filled": len(slots), "appended": len(appended),
              "vocab_size": config_dict["vocab_size"],
              "appended_rows": "mean of the existing rows (embeddings) and entries (bias)"}
    for name, text in (("vocab.txt", "\n".join(t if t is not None else "" for t in new_tokens)
                        + "\n"),
                       ("bert_config.json", json.dumps(config_dict, indent=2) + "\n"),
                       ("vocab_extension.json",
                        json.dumps(report, indent=1, ensure_ascii=False) + "\n")):
        with open(os.path.join(staging, name), "w", encoding="utf-8") as writer:
            writer.write(text)
    if os.path.isdir(output_dir):
        shutil.rmtree(output_dir)
    os.replace(staging, output_dir)
    log_fn(f"{len(ids)} characters added to the vocab of {assets.checkpoint} "
           f"({len(slots)} into [unused] lines, {len(appended)} appended; vocab_size "
           f"{config_dict['vocab_size']}): {output_dir}. Make the data with "
           f"--vocab_file={os.path.join(output_dir, 'vocab.txt')} and continue with "
           f"--init_checkpoint={output_dir}")
    return report
