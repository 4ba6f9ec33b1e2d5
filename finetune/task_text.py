r"""A fine-tuning task's own text as a pretraining corpus, labels dropped (task-adaptive
pretraining, Gururangan et al. 2020).

    python -m finetune.task_text --task=classification --input_file=chnsenticorp/train.tsv \
        --output_file=runs/tapt/chnsenticorp_docs.txt

Reads the file as run_finetune reads it (finetune.formats: any format and column choice it
accepts) and writes blank-line-separated documents, one sentence per line: each example is
one document; a text is cut into sentences after 。！？!? (a sentence pair's two texts are two
sentences, as data_gen.tools.lcqmc_to_docs writes a paraphrase; an NER sentence's characters are
joined back). Repeated documents are written once, in file order. Only the file given is
read: pass the training split, so no dev or test text reaches pretraining. The output
appears complete or not at all; the account says how many examples and documents.
"""
import dataclasses
import re

from common import cli_options
from common.cli_options import option, required
from common.file_utils import write_text_atomically
from finetune import formats, tasks

_SENTENCE_END = re.compile(r"(?<=[。！？!?])")


def sentences(text):
    """The sentences of one text: cut after Chinese / Western sentence ends, blanks dropped."""
    return [part.strip() for part in _SENTENCE_END.split(" ".join(text.split())) if part.strip()]


def documents(task_name, path, options=None):
    """(documents [[sentence, ...]], account dict) of a task's file, labels dropped."""
    options = dict(options or {})
    if tasks.get_task(task_name).metric_kind == "ner":
        examples, account = formats.read_tagged_examples(
            path, format=options.get("input_format") or None, require_labels=False,
            log_fn=lambda message: None)
        texts = [["".join(example.chars)] for example in examples]
    else:
        examples, account = formats.read_text_examples(
            path, task_name, format=options.get("input_format") or None,
            text_fields=options.get("text_fields") or None,
            label_field=options.get("label_field") or None, require_labels=False,
            log_fn=lambda message: None)
        texts = [list(example.texts) for example in examples]
    made, seen = [], set()
    for example_texts in texts:
        document = tuple(s for text in example_texts for s in sentences(text))
        if document and document not in seen:
            seen.add(document)
            made.append(list(document))
    empty = sum(1 for example_texts in texts
                if not any(sentences(text) for text in example_texts))
    account = dict(account.as_dict(), examples=len(examples), documents=len(made),
                   empty_examples=empty,
                   repeated_documents_dropped=len(texts) - len(made) - empty)
    return made, account


@dataclasses.dataclass
class TaskTextOptions:
    """The flags of `python -m finetune.task_text`."""
    task: str = option("classification", "classification | pair | ner (as run_finetune).",
                       choices=tuple(tasks.TASKS))
    input_file: str = required("The task's training file (labels are dropped).")
    output_file: str = required("Where the documents go.")
    input_format: str = option("", "As run_finetune's --input_format (default: detected).")
    text_fields: str = option("", "As run_finetune's --text_fields.")
    label_field: str = option("", "As run_finetune's --label_field.")


def _run(options):
    made, account = documents(options.task, options.input_file, dataclasses.asdict(options))
    if not made:
        raise cli_options.UserError(f"--input_file={options.input_file}: no text read "
                                    f"({account}); check --task and the file's format")
    lines = []
    for document in made:
        lines.extend(document + [""])
    write_text_atomically(options.output_file, lines[:-1])
    print(f"[task_text] {account['examples']} examples -> {account['documents']} documents "
          f"({account['repeated_documents_dropped']} repeated ones dropped) in "
          f"{options.output_file}")


def main(argv=None):
    cli_options.run_main(TaskTextOptions, _run, argv, expected=(formats.DataFormatError,))


if __name__ == "__main__":
    main()
