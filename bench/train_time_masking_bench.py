"""Train-time masking against static masks, side by side in one run: data_gen's time and
bytes, and pretraining's step time.

    python bench/train_time_masking_bench.py [--corpus=../shared/data/corpus/clue_small_sample.txt]
        [--vocab=../shared/data/vocab/bert_chinese_vocab.txt] [--steps=60] [--repeats=2]

data_gen (roberta and bert modes, 128 tokens, one worker each, seconds of the whole command):
static masks with --dupe_factor=5 (the reference experiment's) against --train_time_masking
with --dupe_factor=1; one JSON line each with seconds, bytes and instances, then a line of the
ratios per mode. The pretraining runs read the roberta records.

Pretraining (python -m pretrain.run_pretraining, an L4 H256 BERT over the 21128-token vocab,
batch 32, the session loop): the static records, and the train-time records at
--mlm_probability 0.15 with the static run's 20 prediction slots (the like-for-like pair),
0.3 (38 slots) and 0.5 (64 slots): what the draws cost the input pipeline and what more slots
cost the masked-LM head. The runs alternate, --repeats times; each line gives the median
examples/s the training log reports after its first 20 steps, and a last line each ratio to
static.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")
SEQ = 128
MODEL = dict(attention_probs_dropout_prob=0.1, hidden_act="gelu", hidden_dropout_prob=0.1,
             hidden_size=256, initializer_range=0.02, intermediate_size=1024,
             max_position_embeddings=512, model_type="bert", num_attention_heads=4,
             num_hidden_layers=4, type_vocab_size=2, vocab_size=21128)
RUNS = {  # name: (records, extra run_pretraining flags)
    "static": ("static", []),
    "train_time_0.15": ("train_time", ["--mlm_probability=0.15",
                                       "--max_predictions_per_seq=20"]),
    "train_time_0.3": ("train_time", ["--mlm_probability=0.3"]),
    "train_time_0.5": ("train_time", ["--mlm_probability=0.5"]),
}


def emit(line):
    print(json.dumps(line), flush=True)


def make_data(corpus, vocab, folder):
    """Both kinds of records in roberta and bert mode; {kind: roberta path}, with a JSON line
    each and one of ratios per mode."""
    made = {}
    for mode in ("roberta", "bert"):
        for kind, flags in (("static", ["--dupe_factor=5", "--max_predictions_per_seq=20"]),
                            ("train_time", ["--dupe_factor=1", "--train_time_masking"])):
            path = os.path.join(folder, f"{mode}-{kind}.tfrecord")
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "data_gen.create_pretraining_data",
                 f"--input_file={corpus}", f"--output_file={path}", f"--vocab_file={vocab}",
                 f"--mode={mode}", f"--max_seq_length={SEQ}", "--num_workers=1",
                 "--random_seed=1", *flags],
                cwd=REPO, capture_output=True, text=True, check=True)
            seconds = time.perf_counter() - start
            account = done.stdout + done.stderr
            instances = int(re.search(r"wrote: (\d+) instances", account).group(1))
            made[mode, kind] = dict(mode=mode, kind=kind, flags=flags,
                                    seconds=round(seconds, 2), bytes=os.path.getsize(path),
                                    instances=instances, path=path)
            emit({"bench": "data_gen",
                  **{k: v for k, v in made[mode, kind].items() if k != "path"}})
        emit({"bench": "data_gen_ratio", "mode": mode,
              "bytes": round(made[mode, "train_time"]["bytes"] / made[mode, "static"]["bytes"],
                             3),
              "seconds": round(made[mode, "train_time"]["seconds"]
                               / made[mode, "static"]["seconds"], 3)})
    return {kind: made["roberta", kind]["path"] for kind in ("static", "train_time")}


def train(records, flags, config, output_dir, steps):
    """Median examples/s the training log reports after its first 20 steps."""
    done = subprocess.run(
        [sys.executable, "-m", "pretrain.run_pretraining", f"--bert_config_file={config}",
         f"--input_file={records}", f"--output_dir={output_dir}", "--do_train",
         "--train_batch_size=32", f"--num_train_steps={steps}", "--num_warmup_steps=10",
         "--learning_rate=1e-4", "--save_checkpoints_steps=100000", "--log_every_n_steps=5",
         "--training_loop=session", "--random_seed=1", *flags],
        cwd=REPO, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"run_pretraining failed: {done.stderr[-2000:]}")
    rates = [(int(step), float(rate)) for step, rate in re.findall(
        r"step (\d+)\S*: loss=.*?examples/sec=([\d.]+)", done.stderr)]
    return statistics.median(rate for step, rate in rates if step > 20)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=os.path.join(SHARED, "corpus",
                                                         "clue_small_sample.txt"))
    parser.add_argument("--vocab", default=os.path.join(SHARED, "vocab",
                                                        "bert_chinese_vocab.txt"))
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    for path, flag in ((args.corpus, "--corpus"), (args.vocab, "--vocab")):
        if not os.path.isfile(path):
            raise SystemExit(f"{flag}={path}: file not found (the shared data set?)")
    with tempfile.TemporaryDirectory() as folder:
        records = make_data(args.corpus, args.vocab, folder)
        config = os.path.join(folder, "bert_config.json")
        with open(config, "w", encoding="utf-8") as writer:
            json.dump(MODEL, writer)
        rates = {name: [] for name in RUNS}
        for repeat in range(args.repeats):
            for name, (kind, flags) in RUNS.items():
                rate = train(records[kind], flags, config,
                             os.path.join(folder, f"{name}-{repeat}"), args.steps)
                rates[name].append(rate)
                emit({"bench": "pretraining_step", "run": name, "repeat": repeat,
                      "flags": flags, "examples_per_second": round(rate, 2)})
        static = statistics.mean(rates["static"])
        emit({"bench": "pretraining_ratio_to_static",
              **{name: round(statistics.mean(values) / static, 3)
                 for name, values in rates.items() if name != "static"},
              "static_examples_per_second": round(static, 2),
              "spread": {name: [round(min(v), 2), round(max(v), 2)]
                         for name, v in rates.items()}})


if __name__ == "__main__":
    main()
