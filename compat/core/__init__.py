"""What both the library (`compat.estimator`) and the application (`compat.data`, `compat.modes`) use:
atomic writes, checkpoint recovery, the divergence policy, storage faults, the one user-facing error base,
strategies' plumbing, training scalars, TF_CONFIG, and the one home of TensorFlow's private names.
It imports nothing else of `compat`."""
