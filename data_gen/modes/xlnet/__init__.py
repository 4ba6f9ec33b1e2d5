"""--mode=xlnet: zihangdai/xlnet's permutation-LM records. Streams and A/B windows
(xlnet_instances.py), the spans to predict (xlnet_masking.py), the chunk processor and
encoder (xlnet_processing.py), the record features (xlnet_records.py), the token table
(xlnet_vocabulary.py), the flags (xlnet_flags.py) and the record checks of
inspect_records (xlnet_inspect.py). The hooks of data_gen.modes.registry."""
from data_gen.modes.xlnet.xlnet_flags import XLNetFlags as FLAGS  # noqa: F401 (a hook)
from data_gen.modes.xlnet.xlnet_flags import flag_checks  # noqa: F401 (a hook)
from data_gen.modes.xlnet.xlnet_inspect import INSPECTOR as inspector  # noqa: F401 (a hook)


def make_processor(mode, config, use_native=None):
    """The XLNetChunkProcessor of `config`."""
    del mode
    from data_gen.modes.xlnet.xlnet_processing import XLNetChunkProcessor  # noqa
    return XLNetChunkProcessor(config, use_native)


def load_vocabulary(mode, config, localize=lambda path: path):
    """The run's RunVocabulary with the xlnet sidecar fields (xlnet_vocabulary)."""
    del mode
    from data_gen.modes.xlnet import xlnet_vocabulary  # pylint: disable=import-outside-toplevel
    return xlnet_vocabulary.load_vocabulary(config, localize)


def report_lines(account):
    """The token streams and what the records took of them (when the run made some)."""
    if "xlnet_stream_tokens" not in account:
        return []
    return ["[data_gen] xlnet: {tokens} stream tokens over all passes, {tail} after the last "
            "window of a chunk's stream; labels: {real} B continues A, {random} B random".format(
                tokens=account["xlnet_stream_tokens"],
                tail=account.get("xlnet_stream_tokens_after_last_window", 0),
                real=account.get("labels_1", 0), random=account.get("labels_0", 0))]
