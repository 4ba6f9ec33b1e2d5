"""inspect_records' view of an XLNet record: its problems against XLNET_FEATURES and the
sidecar (lengths, exactly max_predictions_per_seq positions, no special token predicted,
seg_id 0.. 1.. 2), and its tokens with the positions to predict in braces."""
from data_gen.modes.xlnet.xlnet_records import XLNET_FEATURES, XLNET_LABEL_MEANING
from data_gen.records.record_schema import required_names


def xlnet_problems(record, meta):
    """What is wrong with an XLNet record (a list of strings, empty when none)."""
    missing = [name for name in required_names(XLNET_FEATURES) if name not in record]
    if missing:
        return [f"lacks the feature(s) {', '.join(missing)}; features present: "
                f"{', '.join(sorted(record))}"]
    problems = []
    length = len(record["input"])
    lengths = {name: len(record[name]) for name in ("input", "target", "seg_id", "is_masked")}
    if len(set(lengths.values())) != 1 or length != meta.get("max_seq_length", length):
        problems.append(f"feature lengths {lengths}, expected max_seq_length="
                        f"{meta.get('max_seq_length', length)} each")
    count = sum(1 for flag in record["is_masked"] if flag)
    if count != meta.get("max_predictions_per_seq", count):
        problems.append(f"{count} positions to predict, not max_predictions_per_seq="
                        f"{meta['max_predictions_per_seq']}")
    special = {value for key, value in (meta.get("xlnet_special_ids") or {}).items()
               if key in ("sep", "cls", "eod")}
    bad = [position for position, (token, flag) in enumerate(zip(record["input"],
                                                                 record["is_masked"]))
           if flag and token in special]
    if bad:
        problems.append(f"<sep>/<cls>/<eod> to predict at position(s) {bad}")
    seg_id = list(record["seg_id"])
    if seg_id != sorted(seg_id) or seg_id[-1:] != [2] or seg_id.count(2) != 1 \
            or set(seg_id) != {0, 1, 2}:
        problems.append("seg_id is not 0.. 1.. then one 2")
    return problems


def format_xlnet_record(record, names, reuse_length):
    """Human-readable lines for one XLNet record (see the module docstring)."""
    shown = []
    for position, (token_id, flag) in enumerate(zip(record["input"], record["is_masked"])):
        token = names(token_id)
        shown.append(("{" + token + "}") if flag else token)
    if reuse_length:
        shown.insert(reuse_length, "|")
    predicted = [f"{p}:{names(t)}" for p, (t, f) in enumerate(zip(record["input"],
                                                                 record["is_masked"])) if f]
    return [
        f"  tokens ({len(shown) - bool(reuse_length)}, {len(predicted)} to predict): "
        + " ".join(shown),
        "  seg_id: " + " ".join(str(s) for s in record["seg_id"]),
        f"  label: {record['label'][0]}  ({XLNET_LABEL_MEANING})",
        "  predicted: " + " ".join(predicted),
    ]


class XLNetInspector:
    """The hooks data_gen.tools.inspect_records calls for a file of XLNet records."""
    invalid = "XLNet records"

    @staticmethod
    def problems(record, meta):
        return xlnet_problems(record, meta)

    @staticmethod
    def format(record, names, meta):
        return format_xlnet_record(record, names, meta.get("reuse_length"))


INSPECTOR = XLNetInspector()
