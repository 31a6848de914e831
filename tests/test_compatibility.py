"""The compatibility table (compat/estimator/compatibility.py) covers every TF 2.15 name and is the document."""

import json
import os

from compat.estimator import compatibility
from conftest import REPO


def test_every_tf_2_15_name_has_a_status_and_every_difference_says_how():
    rows = compatibility.table()
    names = {name for name, _ in rows}
    assert len(compatibility.tf215_names()) == 157 and {"tf." + name for name in compatibility.tf215_names()} <= names
    for name, entry in rows:
        assert entry.status in (compatibility.SAME, compatibility.DIFFERS, compatibility.REFUSED), name
        assert entry.status == compatibility.SAME or entry.described(), f"{name} {entry.status} without saying how"


def test_lookup_takes_the_longest_prefix_and_the_v1_namespace():
    assert compatibility.lookup("tf.compat.v1.layers.dense").status == compatibility.SAME
    assert compatibility.lookup("tf.contrib.learn.Experiment").status == compatibility.REFUSED
    assert compatibility.lookup("tf.compat.v1.estimator.tpu.TPUEstimator") == \
        compatibility.lookup("tf.estimator.tpu.TPUEstimator")
    assert compatibility.lookup("numpy.zeros").status == compatibility.UNKNOWN


def test_docs_compatibility_md_is_the_table():
    with open(os.path.join(REPO, "docs", "compatibility.md")) as stream:
        assert stream.read() == compatibility.markdown(), "regenerate: python -m compat.estimator.compatibility " \
                                                          "--markdown > docs/compatibility.md"


def test_the_recorded_unresolved_names_are_what_resolving_gives():
    """The migration check judges TF 2.15's private module names from legacy_unresolved.json, without TensorFlow:
    it must be what resolving each name gives now."""
    from compat.estimator import legacy_modules

    with open(os.path.join(REPO, "compat", "estimator", "legacy_unresolved.json")) as stream:
        assert json.load(stream) == legacy_modules.unresolved(), (
            "regenerate: python -m compat.estimator.compatibility --unresolved > compat/estimator/legacy_unresolved.json"
        )


def _resolve(dotted: str):
    """The object `tf.a.b.c` names now, or None."""
    import tensorflow as tf

    value = tf
    for part in dotted.split(".")[1:]:
        value = getattr(value, part, None)
        if value is None:
            return None
    return value


def test_every_replacement_the_check_suggests_resolves_after_install(tmp_path, installed):
    """A migrating user follows the table's "use tf.X" advice: every X must exist once compat.estimator is
    installed, for each row, each TF 1.x name family (with real member names) and each tf.contrib.estimator
    name TF 2.15 kept elsewhere."""
    import re

    import tensorflow as tf

    import compat.estimator as estimator

    suggestion = re.compile(r"use (tf\.[A-Za-z0-9_.]+(?:<name>)?)")
    members = {
        "tf.compat.v1.layers.<name>": ["dense", "conv2d", "batch_normalization", "dropout", "flatten"],
        "tf.compat.v1.nn.rnn_cell.<name>": ["BasicLSTMCell", "LSTMCell", "GRUCell", "MultiRNNCell"],
        "tf.compat.v1.train.<name>": list(compatibility._TF1_ONLY_TRAIN),
    }
    notes = [entry.note for _, entry in compatibility.table()]
    notes += [compatibility.lookup("tf.train." + name).note for name in compatibility._TF1_ONLY_TRAIN]
    contrib = sorted({name.split(".")[-1] for name in compatibility.tf215_names() if name.startswith("estimator.")})
    notes += [compatibility.lookup(f"tf.contrib.estimator.{member}").note for member in contrib]
    wanted = set()
    for note in notes:
        for target in suggestion.findall(note or ""):
            wanted.update(t.replace("<name>", m) for t in [target] for m in members.get(target, [""]))
    assert "tf.estimator.experimental.stop_if_no_decrease_hook" in wanted and len(wanted) > 30
    missing = sorted(target.rstrip(".") for target in wanted if _resolve(target.rstrip(".")) is None)
    assert not missing
    # the case a user hit: the advice for tf.contrib.estimator.stop_if_no_decrease_hook runs
    est = estimator.Estimator(lambda features, labels, mode: None, model_dir=str(tmp_path))
    hook = tf.estimator.experimental.stop_if_no_decrease_hook(est, "loss", max_steps_without_decrease=100)
    assert isinstance(hook, tf.compat.v1.train.SessionRunHook)
