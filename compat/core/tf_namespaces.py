"""The spellings of TensorFlow's two API namespaces, as TF 2.15 gave them the Estimator's names.

TF 2.15 bound `estimator` in every module object that is its TF 2 API (`tf`, `tf.compat.v2`, and the
`compat.v2` nested in either namespace) and the TF 1.x `estimator`, `layers` and `keras` in every one that is
its TF 1.x API (`tf.compat.v1`, and the nested `compat.v1`s). Google's open-source style imports
`tensorflow.compat.v2 as tf`, so a library may reach `tf.compat.v2.estimator` or `tf.compat.v2.compat.v1.layers`.

Plain data, read by both `install()` (which module objects to give the names) and the migration check
(which spellings are the same name), so the two never disagree; it imports nothing.
"""

from __future__ import annotations

# Attribute paths from `tf` to each module object of one namespace ("" is `tf` itself).
SPELLINGS: dict[str, tuple[str, ...]] = {
    "v2": ("", "compat.v2", "compat.v1.compat.v2", "compat.v2.compat.v2"),
    "v1": ("compat.v1", "compat.v1.compat.v1", "compat.v2.compat.v1"),
}


def canonical(name: str) -> str:
    """A `tf.`-rooted name in its namespace's shortest spelling: `tf.compat.v2.estimator.X` -> `tf.estimator.X`,
    `tf.compat.v2.compat.v1.layers.dense` -> `tf.compat.v1.layers.dense`."""
    for version, shortest in (("v2", "tf"), ("v1", "tf.compat.v1")):
        for path in sorted(SPELLINGS[version], key=len, reverse=True):
            spelled = f"tf.{path}" if path else "tf"
            if spelled != shortest and (name == spelled or name.startswith(spelled + ".")):
                return shortest + name[len(spelled) :]
    return name
