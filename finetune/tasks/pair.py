"""Sentence pairs (`pair`): classification of two texts, `[CLS] a [SEP] b [SEP]`.

LCQMC, AFQMC, BQ, OCNLI, ... are datasets of this task: TSV/CSV with a header
(`text_a`, `text_b`, `label`), CLUE JSON lines (`sentence1`, `sentence2`,
`label`) or LCQMC's header-less `text_a<TAB>text_b<TAB>label[<TAB>condition]`
lines. Everything else is finetune.tasks.classification's.
"""
from finetune.tasks.classification import ClassificationTask


class PairTask(ClassificationTask):
    def __init__(self):
        super().__init__("pair", num_texts=2)
