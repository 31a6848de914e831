"""The compatibility table (compat/estimator/compatibility.py) covers every TF 2.15 name and is the document."""

import os

from compat.estimator import compatibility
from conftest import REPO


def test_every_tf_2_15_name_has_a_status_and_every_difference_says_how():
    rows = compatibility.table()
    names = {name for name, _ in rows}
    assert len(compatibility.tf215_names()) == 157 and {"tf." + name for name in compatibility.tf215_names()} <= names
    for name, entry in rows:
        assert entry.status in (compatibility.SAME, compatibility.DIFFERS, compatibility.REFUSED), name
        assert entry.status == compatibility.SAME or entry.note, f"{name} {entry.status} without saying how"


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
