"""Held-out documents: which documents of a corpus go to the eval files (--eval_share).

A document belongs to the eval split when a keyed hash of its text (BLAKE2b, keyed with
--random_seed) falls below the share. So the split depends on the text alone: it is the
same for any worker count, chunk size or runner, and two copies of one document always land
in the same split, so a repeated document cannot be trained on and evaluated at once.

create_pretraining_data makes the two splits in two passes over the corpus, each keeping
its own documents (`DocumentSplit.keep`); the other split's documents are counted as
`documents_in_other_split` in that pass's account. Each file's sidecar records the split it
holds (`DocumentSplit.sidecar`); data_gen.records.metadata.shares_documents reads two of them.
"""
import dataclasses
import hashlib
import os

SPLITS = ("train", "eval")
_SCALE = float(2 ** 64)


def eval_fraction(document, seed):
    """A number in [0, 1) fixed by the document's sentences and the seed."""
    key = int(seed).to_bytes(8, "little", signed=False)
    digest = hashlib.blake2b("\n".join(document).encode("utf-8"), digest_size=8, key=key)
    return int.from_bytes(digest.digest(), "little") / _SCALE


@dataclasses.dataclass(frozen=True)
class DocumentSplit:
    """The documents of one pass: split "train" keeps those not held out, "eval" the rest."""
    share: float
    seed: int
    split: str

    def keep(self, documents):
        """(the documents of this split, how many belonged to the other one)."""
        want_eval = self.split == "eval"
        kept = [document for document in documents
                if (eval_fraction(document, self.seed) < self.share) == want_eval]
        return kept, len(documents) - len(kept)

    def sidecar(self):
        """What a data file's sidecar records about the split it holds."""
        return {"document_split": self.split, "eval_share": self.share,
                "split_seed": self.seed}


def default_eval_paths(output_paths):
    """An eval/ folder beside each output file, same names: a glob over the training files'
    folder (e.g. out/train*.tfrecord) never picks the eval files up."""
    return [os.path.join(os.path.dirname(path), "eval", os.path.basename(path))
            for path in output_paths]
