"""Has a pretraining checkpoint learned from context? Baselines from the eval data itself.

A masked-LM head first learns the label distribution: it predicts the most
frequent tokens everywhere, and its accuracy and loss settle on those of
"always predict the unigram distribution of the masked labels" (the unigram
plateau, about 5% accuracy on Chinese character vocabularies). Only after that
does it use the context. The sentence head's plateau is chance.

The eval pass measures both baselines on exactly the batches it scores
(pretrain.models.eval_metrics, and each family's own in its folder, called from
the model_fn as ModelFamily.eval_metrics says):

  <prefix>_unigram_accuracy  share of the most frequent label (weighted)
  <prefix>_unigram_loss      entropy of the label distribution, in nats: the
                             cross-entropy of predicting that distribution
  <prefix>_num_targets       weighted number of labels scored

(prefix `masked_lm`, `plm` for XLNet's permutation LM; for the sentence head the names are `sentence_chance_*`, for
ELECTRA's discriminator `disc_majority_accuracy`, `disc_label_entropy`, `disc_num_tokens`),
and `not_learned_warnings` turns an eval result into one warning line per head
whose accuracy is not clearly above its baseline.

    python -m pretrain.training.learning_check --eval_results=OUTPUT_DIR/eval_results.txt

prints those lines for a finished run and exits 3 when a head that trains what fine-tuning
starts from has not learned (its masked or permutation LM; ELECTRA's discriminator too):
scripts/lcqmc_experiment.sh stops there rather than fine-tune from it. For a run
continued from --init_checkpoint it also prints `continuing_warnings`: a held-out loss that is
not clearly below the starting checkpoint's, and the rise of an extra text's loss.
"""
import dataclasses
import math
import os
import sys

from common import cli_options
from pretrain.models import registry

NOT_LEARNED = "the checkpoint has not yet learned from context: "
MIN_GAIN = 0.02         # accuracy points (absolute) a head must clear its baseline by
STANDARD_ERRORS = 3.0   # ... and at least this many standard errors of its accuracy
def heads():
    """Every registered family's pretraining heads (ModelFamily.eval_heads), each once."""
    return registry.declared("eval_heads")


def language_model_losses():
    """The language-model losses a continued run compares with its start's."""
    return tuple(head.loss for head in heads() if head.language_model)


def required_accuracy(baseline_accuracy, count):
    """The accuracy a head must exceed to count as having left its baseline."""
    count = max(float(count or 0), 1.0)
    spread = math.sqrt(max(baseline_accuracy * (1.0 - baseline_accuracy), 0.0) / count)
    return baseline_accuracy + max(MIN_GAIN, STANDARD_ERRORS * spread)


def _judged_heads(eval_results):
    """(head, warning line or None, learned?) for each measured head with its baseline."""
    for head in heads():
        accuracy, loss, base_accuracy, base_loss, count = (
            head.accuracy, head.loss, head.baseline_accuracy, head.baseline_loss, head.count)
        if any(eval_results.get(key) is None
               for key in (accuracy, loss, base_accuracy, base_loss)):
            continue  # the head, or its baseline, was not measured
        value, base = float(eval_results[accuracy]), float(eval_results[base_accuracy])
        needed = required_accuracy(base, eval_results.get(count))
        if value > needed:
            yield head, None, True
        elif needed >= 1.0:
            yield head, (
                f"too few eval labels ({float(eval_results.get(count) or 0):.0f}) to tell "
                f"{accuracy} {value:.4f} from {head.baseline}, {base:.4f}: evaluate on more "
                "data (--max_eval_steps, --eval_batch_size)"), None
        else:
            yield head, (
                f"{NOT_LEARNED}{accuracy} {value:.4f} "
                f"(loss {float(eval_results[loss]):.3f}) is not clearly above "
                f"{head.baseline}, {base:.4f} (loss {float(eval_results[base_loss]):.3f}; "
                f"needed above {needed:.4f}); {head.advice}"), False


def not_learned_warnings(eval_results):
    """One line per head whose accuracy is not clearly above its baseline ([] if all are).

    eval_results: the eval metrics dict (keys of `heads()`; heads absent from it, e.g.
    no sentence head, or without their baseline, are skipped).
    """
    return [line for _, line, _ in _judged_heads(eval_results) if line]


def read_eval_results(path):
    """{key: float} of an eval_results.txt (`key = value` lines); {} when absent."""
    results = {}
    if not os.path.isfile(path):
        return results
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, sep, value = line.partition(" = ")
            try:
                results[key.strip()] = float(value) if sep else None
            except ValueError:
                continue
    return results


def _loss_spread(results, loss, prefix):
    """(mean loss, its standard error) of one eval, or None without the second moment."""
    mean = results.get(prefix + loss)
    squared = results.get(prefix + loss + "_squared")
    count = results.get(prefix + loss.replace("_loss", "_num_targets"))
    if mean is None or squared is None or not count:
        return None
    variance = max(float(squared) - float(mean) ** 2, 0.0)
    return float(mean), math.sqrt(variance / float(count))


def continuing_warnings(results):
    """With the init_ metrics of a continued run (pretrain.training.continued_eval): a held-out
    loss not below the start's by STANDARD_ERRORS standard errors of the difference (from each
    eval's <loss>_squared), and each extra text's loss that rose (what continuing forgot)."""
    lines = []
    extra = sorted({key.split("/", 1)[0] for key in results if "/" in key})
    for loss in language_model_losses():
        for prefix in [""] + [name + "/" for name in extra]:
            end = _loss_spread(results, loss, prefix)
            start = _loss_spread(results, loss, prefix + "init_")
            if end is None or start is None:
                continue
            where = f"{prefix.rstrip('/')} " if prefix else ""
            change = end[0] - start[0]
            if prefix:
                if change > 0:
                    lines.append(f"{where}{loss} rose from {start[0]:.4f} at the start to "
                                 f"{end[0]:.4f} (+{change:.4f}): what continuing forgot of "
                                 "that text")
                continue
            needed = STANDARD_ERRORS * math.hypot(start[1], end[1])
            if -change <= needed:
                lines.append(f"continuing has not clearly helped: held-out {loss} {end[0]:.4f} "
                             f"is not below the starting checkpoint's {start[0]:.4f} by "
                             f"{STANDARD_ERRORS:g} standard errors ({needed:.4f}); train "
                             "longer or at another learning rate, or check that the eval "
                             "text is the text continued on")
    return lines


LANGUAGE_MODEL_ACCURACIES = ("masked_lm_accuracy", "plm_accuracy")


def unlearned_start_heads(eval_results):
    """The measured EvalHeads that train what fine-tuning starts from (gates_finetuning: a
    masked or permutation LM, ELECTRA's discriminator) and are not clearly above their
    baseline; [] when every such head learned or none was measured."""
    return [head for head, _, learned in _judged_heads(eval_results)
            if head.gates_finetuning and learned is False]


EXIT_NOT_LEARNED = 3


@dataclasses.dataclass
class LearningCheckOptions:
    """The flags of `python -m pretrain.training.learning_check`."""
    eval_results: str = cli_options.required("eval_results.txt of a run_pretraining --do_eval.")


def _check(options):
    if not os.path.isfile(options.eval_results):
        raise cli_options.UserError(f"--eval_results={options.eval_results}: no such file "
                                    "(run_pretraining --do_eval writes it in --output_dir)")
    results = read_eval_results(options.eval_results)
    if not any(name in results for name in LANGUAGE_MODEL_ACCURACIES):
        raise cli_options.UserError(f"--eval_results={options.eval_results}: no "
                                    "masked_lm_accuracy or plm_accuracy in it (is it "
                                    "run_pretraining's?)")
    lines = not_learned_warnings(results) + continuing_warnings(results)
    for line in lines:
        print(f"{options.eval_results}: {line}")
    if unlearned_start_heads(results):
        sys.exit(EXIT_NOT_LEARNED)


def main(argv=None):
    cli_options.run_main(LearningCheckOptions, _check, argv)


if __name__ == "__main__":
    main()
