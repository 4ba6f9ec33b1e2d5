"""Shared pytest fixtures: repository paths and the optional ../shared data."""
import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Tiny models: TensorFlow's graph optimizer would take longer than their few steps, in this
# process and in the tools the tests start (pretrain.training.strategy).
os.environ.setdefault("ZH_PRETRAIN_GRAPH_OPTIMIZER", "off")

# Before any test module loads TensorFlow, so that the tests run the CPU kernels
# the toolkit's entry points run (oneDNN unless TF_ENABLE_ONEDNN_OPTS=0).
import pretrain  # noqa: E402,F401

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


def shared_path(*parts):
    """Path under ../shared/data, or skip the test with the reason if absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} not present (a fresh clone has no ../shared); "
                    "this test needs the shared data set")
    return path


@pytest.fixture
def repo_root():
    return REPO_ROOT


def _sessions_without_graph_optimizer():
    """The tests' own tf.Session()s skip grappler as the tools' sessions do under
    ZH_PRETRAIN_GRAPH_OPTIMIZER=off (a session given a config keeps it as given)."""
    from tensorflow.python.client import session as tf_session  # pylint: disable=import-outside-toplevel
    from tensorflow.core.protobuf import config_pb2  # pylint: disable=import-outside-toplevel
    opened = tf_session.Session.__init__

    def open_session(self, target="", graph=None, config=None):
        if config is None:
            config = config_pb2.ConfigProto()
            config.graph_options.rewrite_options.disable_meta_optimizer = True
        opened(self, target, graph, config)

    tf_session.Session.__init__ = open_session


from pretrain.training import strategy  # noqa: E402

if strategy.graph_optimizer_off():
    _sessions_without_graph_optimizer()
