"""Differential testing against TF 2.15: seeded Estimator programs, run on both sides and compared.

- `generator`: a seed gives one small, deterministic program (a JSON-able spec), drawn from the
  dimensions of `generator.UNIVERSE`.
- `program`: runs a spec with whatever `tf.estimator` the interpreter has (TF 2.15's own, or this
  project's after `compat.estimator.install()`); the same code on both sides.
- `worker`: many seeds in one process (`python -m tests.differential.worker`).
- `compare`: what differs between two results, and which differences docs/estimator.md lists.

bench/differential.py runs the whole range against TF 2.15 in its side environment;
tests/test_differential.py replays recorded TF 2.15 results without it.
"""
