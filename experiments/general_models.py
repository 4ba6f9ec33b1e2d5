"""Stand-ins for released models, made the way a release is made (scripts/make_general_models.sh
execs it): pretraining on general text (GENERAL_CORPUS, part held out for their own eval),
then exported with export_hf and imported back with import_hf, so that continued pretraining
(experiments.continued_row) starts from a transformers model directory exactly as for a user
who downloaded one. Each model is data: general/NAME.json (config, data mode,
optimizer, the name continued_row knows it by).

    python -m experiments.general_models [--dry_run]

Settings are environment variables, by the names --help lists (common.script_runs).
"""
import os

from common.model_configs import shipped_path
from experiments import data_files
from common.script_runs import (REPO_ROOT, SHARED_DATA, Refusal, ScriptRun, clock,
                                setting)

SCRIPT = "make_general_models.sh"
MODEL_FIELDS = {"order": int, "model_config": str, "mode": str, "optimizer_flags": list,
                "continued_as": str, "help": list, "continued_help": str, "why": str}
DEFAULTS = {
    "GENERAL_CORPUS": f"{SHARED_DATA}/corpus/clue_small_sample.txt",
    "VOCAB": f"{SHARED_DATA}/vocab/bert_chinese_vocab.txt",
    "OUT": f"{REPO_ROOT}/runs/general_models", "MODELS": "bert,albert",
    # Three times a row of the LCQMC experiment (1000 steps of 64 x 64 tokens).
    "PRETRAIN_STEPS": "3000", "PRETRAIN_BATCH_SIZE": "64", "PRETRAIN_SEED": "1",
    "MAX_SEQ_LENGTH": "64", "MAX_PREDICTIONS": "10", "DUPE_FACTOR": "10", "EVAL_SHARE": "0.05",
}


def models():
    """{NAME: its file's fields} of general/NAME.json, in their order."""
    return data_files.read_folder("general", MODEL_FIELDS)


def read_settings():
    return {name: setting(name, default) for name, default in DEFAULTS.items()}


def usage(values):
    lines = []
    for name, model in models().items():
        lines += [f"  {name:<7} {model['help'][0]}"] + [f"{'':10}{line}"
                                                       for line in model["help"][1:]]
    model_lines = "\n".join(lines)
    return f"""Usage: bash scripts/make_general_models.sh [--dry_run]

Makes the general models the continued-pretraining experiment starts from (docs/experiments.md,
"Continued pretraining, measured"), one per MODELS entry:
{model_lines}
For each: OUT/MODEL/data (EVAL_SHARE of the documents held out in data/eval/), OUT/MODEL/pretrain
(eval_results.txt: on the held-out general text), OUT/MODEL/hf (export_hf: a transformers
directory) and OUT/MODEL/released (import_hf of it: where continuing starts). GENERAL_CORPUS must
share no text with the tasks the models are later compared on.

Settings (environment variables) [defaults]:
  GENERAL_CORPUS     blank-line-separated documents [{values['GENERAL_CORPUS']}]
  VOCAB              vocab file                      [{values['VOCAB']}]
  OUT                output folder                   [{values['OUT']}]
  MODELS             comma-separated, of bert,albert [{values['MODELS']}]
  PRETRAIN_STEPS     pretraining updates             [{values['PRETRAIN_STEPS']}]
  PRETRAIN_BATCH_SIZE  sequences per update          [{values['PRETRAIN_BATCH_SIZE']}]
  PRETRAIN_SEED      pretraining seed                [{values['PRETRAIN_SEED']}]
  MAX_SEQ_LENGTH     tokens per sequence             [{values['MAX_SEQ_LENGTH']}]
  MAX_PREDICTIONS    masked positions per sequence   [{values['MAX_PREDICTIONS']}]
  DUPE_FACTOR        masking passes over the text    [{values['DUPE_FACTOR']}]
  EVAL_SHARE         documents held out for eval     [{values['EVAL_SHARE']}]
  PYTHON             interpreter                     [.venv/bin/python, else python3]"""


def make_model(run, values, name, model):
    """OUT/NAME/{data, pretrain, hf, released}: data unless made, pretraining (resumed by
    run_pretraining), its learning check, export_hf and import_hf."""
    root = f"{values['OUT']}/{name}"
    print(f"== [{clock()}] {name}: pretraining data (held out: {values['EVAL_SHARE']} of the "
          "documents)", flush=True)
    if not os.path.isfile(f"{root}/data/eval/general.tfrecord.meta.json"):
        run.run(run.tool(
            "data_gen.create_pretraining_data", f"--input_file={values['GENERAL_CORPUS']}",
            f"--output_file={root}/data/general.tfrecord", f"--vocab_file={values['VOCAB']}",
            f"--mode={model['mode']}", f"--max_seq_length={values['MAX_SEQ_LENGTH']}",
            f"--max_predictions_per_seq={values['MAX_PREDICTIONS']}",
            f"--dupe_factor={values['DUPE_FACTOR']}", f"--eval_share={values['EVAL_SHARE']}",
            f"--random_seed={values['PRETRAIN_SEED']}"))
    print(f"== [{clock()}] {name}: pretraining {values['PRETRAIN_STEPS']} steps", flush=True)
    run.run(run.tool(
        "pretrain.run_pretraining", f"--bert_config_file={shipped_path(model['model_config'])}",
        f"--input_file={root}/data/general.tfrecord",
        f"--eval_input_file={root}/data/eval/general.tfrecord", f"--output_dir={root}/pretrain",
        "--do_train", "--do_eval", f"--train_batch_size={values['PRETRAIN_BATCH_SIZE']}",
        f"--num_train_steps={values['PRETRAIN_STEPS']}", "--num_warmup_steps=100",
        "--save_checkpoints_steps=1000", "--max_eval_steps=1000",
        f"--random_seed={values['PRETRAIN_SEED']}", "--strategy=cpu", *model["optimizer_flags"]))
    run.run(run.tool("pretrain.training.learning_check",
                     f"--eval_results={root}/pretrain/eval_results.txt"))
    print(f"== [{clock()}] {name}: export_hf, then import_hf (the 'downloaded' model)",
          flush=True)
    run.run(run.tool("pretrain.interop.export_hf", f"--init_checkpoint={root}/pretrain",
                     f"--output_dir={root}/hf", "--overwrite"))
    run.run(run.tool("pretrain.interop.import_hf", f"--model_dir={root}/hf",
                     f"--output_dir={root}/released", "--overwrite"))


def _make_models(run, argv):
    positional = run.positional(argv)
    if positional:
        raise Refusal(f"unknown argument '{positional[0]}' (see --help; settings are "
                      "environment variables)")
    values = read_settings()
    for name in ("GENERAL_CORPUS", "VOCAB"):
        if not os.path.isfile(values[name]):
            raise Refusal(f"{name}={values[name]} not found")
    known = models()
    for name in values["MODELS"].replace(",", " ").split():
        if name not in known:
            raise Refusal(f"unknown model '{name}' in MODELS: choose {' or '.join(known)}")
        make_model(run, values, name, known[name])


def main(argv=None):
    run = ScriptRun(SCRIPT, lambda: usage(read_settings()))
    run.main(lambda args: _make_models(run, args), argv)


if __name__ == "__main__":
    main()
