"""The session loop's logging and summary hooks fetch the same tensors at every step (a new
set of fetches makes the session optimise its graph again) and act only every N steps."""
import glob
import os

import pytest
import tensorflow.compat.v1 as tf

from pretrain.training import training_hooks


def _train(tmp_path, hooks, steps):
    """`steps` runs of a graph whose loss is 10 - step, with the hooks `hooks` make."""
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        loss = 10.0 - tf.cast(global_step, tf.float32)
        tf.summary.scalar("loss", loss)
        # as in a training step, the step is read (by the hooks too) before it is incremented
        read = global_step._as_graph_element()  # pylint: disable=protected-access
        with tf.control_dependencies([loss, read]):
            step = tf.assign_add(global_step, 1)
        with tf.train.MonitoredSession(hooks=[make(loss) for make in hooks]) as session:
            for _ in range(steps):
                session.run(step)


def test_summaries_and_loss_logs_every_n_steps(tmp_path, monkeypatch):
    logged = []
    monkeypatch.setattr(training_hooks.logging, "info",
                        lambda fmt, *args: logged.append(fmt % args))
    hooks = [lambda loss: training_hooks.SummaryWriterHook(str(tmp_path), every_n_steps=2),
             lambda loss: training_hooks.LossLoggingHook(loss, every_n_steps=2)]
    _train(tmp_path, hooks, steps=5)
    written = []
    for path in glob.glob(os.path.join(str(tmp_path), "events.out.tfevents.*")):
        for event in tf.train.summary_iterator(path):
            written += [(event.step, value.simple_value) for value in event.summary.value]
    # the step each run finished, and the loss its graph computed (before the increment)
    assert sorted(written) == [(1, 10.0), (3, 8.0), (5, 6.0)]
    assert logged == ["loss = 10.0, step = 0", "loss = 8.0, step = 2", "loss = 6.0, step = 4"]


def test_every_step_asks_for_the_same_fetches(tmp_path):
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        loss = 10.0 - tf.cast(global_step, tf.float32)
        tf.summary.scalar("loss", loss)
        hooks = [training_hooks.SummaryWriterHook(str(tmp_path), every_n_steps=3),
                 training_hooks.LossLoggingHook(loss, every_n_steps=3),
                 training_hooks.PretrainingLoggingHook({"loss": loss, "learning_rate": loss},
                                                       every_n_steps=3)]
        step = tf.assign_add(global_step, 1)
        fetched = []
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            for hook in hooks:
                hook.begin()
                hook.after_create_session(session, None)
            for _ in range(7):
                asked = [hook.before_run(None).fetches for hook in hooks]
                fetched.append([sorted(fetches) for fetches in asked])
                results, _ = session.run([asked, step])
                for hook, values in zip(hooks, results):
                    hook.after_run(None, tf.train.SessionRunValues(values, None, None))
    assert all(step == fetched[0] for step in fetched)
    assert fetched[0] == [["step", "summary"], ["loss", "step"], ["learning_rate", "loss"]]
    assert [step for step, _ in hooks[2].history] == [0, 2, 5]  # logged every 3 all the same


if __name__ == "__main__":
    pytest.main([__file__])
