"""How XLNet reads its pretraining records (ModelFamily.record_input): data_gen --mode=xlnet
records, each turned into the permutation LM's features at input time
(pretrain.models.xlnet.permutation), with the reuse length and <sep>/<cls> ids from the
records' sidecars and --perm_size."""
from data_gen.records import metadata
from data_gen.modes.xlnet import xlnet_records
from common.file_utils import SIDECAR_SUFFIX
from pretrain.models.family import RecordInputError
from pretrain.models.xlnet import permutation
from pretrain.models.xlnet.permutation import PermutationInput


class PermutationRecords:
    """The family's record reader: run_pretraining, the data checks and the input
    pipeline call these instead of naming the family."""
    flags = ("perm_size",)  # run_pretraining's flags only this reader takes

    @staticmethod
    def lengths(max_seq_length, max_predictions_per_seq):
        """{feature: (dtype, length)} of one record."""
        del max_predictions_per_seq  # num_predict is chosen at input time
        return xlnet_records.xlnet_feature_lengths(max_seq_length)

    @staticmethod
    def prepare(sidecars, options):
        """(the permutation settings, a log line) from the records' sidecars and the
        run's options (perm_size, max_seq_length, max_predictions_per_seq);
        RecordInputError when they do not fit."""
        prepared = _permutation_input(sidecars, options.perm_size, options.max_seq_length,
                                      options.max_predictions_per_seq)
        return prepared, ("permutation LM: reuse_length=%d perm_size=%d num_predict=%d"
                          % (prepared.reuse_length, prepared.perm_size,
                             prepared.num_predict))

    @staticmethod
    def prepared_for(prepared, is_training):
        """The same settings for training and evals (an eval's orders are keyed by its seed)."""
        del is_training
        return prepared

    @staticmethod
    def features(decoded, prepared, key, position):
        """The model's features of one decoded record (a new order each read, drawn from
        key [2] int64; the record's place, `position`, is in the key already)."""
        del position
        return permutation.record_features(decoded, prepared, key)


RECORDS = PermutationRecords()


def _permutation_input(sidecars, perm_size, max_seq_length, max_predictions_per_seq):
    """XLNet's PermutationInput from its records' sidecars and --perm_size (None: the
    reuse length); RecordInputError when the sidecars are missing or disagree, or the
    permutation blocks do not tile the reuse window and the rest.

    sidecars: (path, sidecar dict or None) of every input file.
    """
    found = {}
    for path, meta in sidecars:
        where = metadata.metadata_path(path)
        if not meta:
            raise RecordInputError(f"{path} has no {SIDECAR_SUFFIX} sidecar: XLNet training reads "
                                 "the reuse length and the <sep>/<cls> ids from it; make the "
                                 "data with data_gen --mode=xlnet")
        special = meta.get("xlnet_special_ids") or {}
        if "reuse_length" not in meta or not {"sep", "cls"} <= set(special):
            raise RecordInputError(f"{where} lacks reuse_length or xlnet_special_ids sep/cls; "
                                 "make the data with data_gen --mode=xlnet")
        found.setdefault((int(meta["reuse_length"]), int(special["sep"]), int(special["cls"])),
                         where)
    if len(found) > 1:
        (first, one), (second, other) = list(found.items())[:2]
        raise RecordInputError(f"the input files disagree: {one} has reuse_length, sep, cls = "
                             f"{first}, {other} has {second}; train on data of one setting")
    (reuse_length, sep, cls), _ = found.popitem()
    rest = max_seq_length - reuse_length
    perm_size = (reuse_length or rest) if perm_size is None else int(perm_size)
    if perm_size <= 0 or (reuse_length and reuse_length % perm_size) or rest % perm_size:
        raise RecordInputError(
            f"--perm_size={perm_size} must divide the data's reuse_length={reuse_length} "
            f"and the rest of the sequence, {rest} (max_seq_length {max_seq_length}); choose a "
            "common divisor (default: the reuse length)")
    return PermutationInput(reuse_length, perm_size, max_predictions_per_seq, (sep, cls))
