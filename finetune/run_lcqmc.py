r"""Fine-tune on LCQMC: the `pair` task of finetune.run_finetune with LCQMC's defaults.

    python -m finetune.run_lcqmc --data_dir=DIR --init_checkpoint=output/pretrain \
        --output_dir=runs/after [--vocab_file=vocab.txt]

`DIR` holds `train.txt`, `dev.txt`, `test.txt` (`text_a<TAB>text_b<TAB>label`,
no header; a model with layer_norm_cond_size C needs a 4th field, a class id
< C or C comma-separated numbers). Every flag of run_finetune is accepted;
only `--task` (pair), `--data_dir` (required) and `--max_seq_length` (64)
default differently. Outputs are run_finetune's (results.json with the flat
`dev_accuracy` / `test_accuracy` keys, test_predictions.jsonl, best/).
"""
import dataclasses

from common import cli_options
from common.cli_options import option, required
from finetune import run_finetune


@dataclasses.dataclass
class LcqmcSettings(run_finetune.FinetuneSettings):
    """run_finetune's settings with LCQMC's defaults; shared with finetune.compare."""
    task: str = option("pair", "Always pair for LCQMC.", choices=("pair",))
    data_dir: str = required("Folder with train.txt, dev.txt, test.txt "
                             "(text_a<TAB>text_b<TAB>label; a model with layer_norm_cond_size "
                             "C needs a 4th field: a class id < C or C comma-separated "
                             "numbers).")
    max_seq_length: int = option(64, "Tokens per pair incl. [CLS] and 2 [SEP].")


@dataclasses.dataclass
class FinetuneOptions(LcqmcSettings):
    """The flags of `python -m finetune.run_lcqmc`."""
    init_checkpoint: str = option(None, "Checkpoint prefix or directory (latest checkpoint); "
                                        "empty = random initialisation.")
    output_dir: str = required("Where checkpoints, best/, results.json go.")
    overwrite_output_dir: bool = option(False, "Delete a previous run in --output_dir.")


DEFAULTS = {field.name: field.default for field in dataclasses.fields(FinetuneOptions)}
SettingsError = run_finetune.SettingsError


def run(settings, log_fn=print):
    """Fine-tunes and tests on LCQMC; returns run_finetune's results dict."""
    settings = dataclasses.asdict(cli_options.make_options(FinetuneOptions, settings))
    return run_finetune.run(settings, log_fn=log_fn)


def main(argv=None):
    run_finetune.main(argv, options_class=FinetuneOptions)


if __name__ == "__main__":
    main()
