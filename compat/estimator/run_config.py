"""RunConfig: where and how often an Estimator saves, summarises and logs, with TF 2.15's defaults."""

from __future__ import annotations

import tempfile
from typing import Any

from absl import logging


_DEFAULT_SAVE_SECS = 600
_UNSET = object()  # tells "not given" from an explicit None, which turns checkpoints off


class RunConfig:
    """Where and how often an Estimator saves, summarises and logs (tf.estimator.RunConfig).

    With neither `save_checkpoints_steps` nor `save_checkpoints_secs`, checkpoints
    are saved every 600 s; giving both is an error, and both given as None turns
    checkpoints off. `model_dir=None` means a new temporary folder, with a warning.
    `tf_random_seed` seeds Python, NumPy and TensorFlow when training starts.
    """

    def __init__(
        self,
        model_dir: str | None = None,
        tf_random_seed: int | None = None,
        save_summary_steps: int = 100,
        save_checkpoints_steps: Any = _UNSET,
        save_checkpoints_secs: Any = _UNSET,
        keep_checkpoint_max: int = 5,
        keep_checkpoint_every_n_hours: float = 10000,
        log_step_count_steps: int = 100,
        **unsupported: Any,
    ):
        if save_checkpoints_steps is _UNSET and save_checkpoints_secs is _UNSET:
            save_checkpoints_steps, save_checkpoints_secs = None, _DEFAULT_SAVE_SECS
        save_checkpoints_steps = None if save_checkpoints_steps is _UNSET else save_checkpoints_steps
        save_checkpoints_secs = None if save_checkpoints_secs is _UNSET else save_checkpoints_secs
        if save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError("Can not provide both save_checkpoints_steps and save_checkpoints_secs.")
        if unsupported:
            logging.warning("RunConfig ignores %s: not supported by compat.estimator", sorted(unsupported))
        self.model_dir = model_dir
        self.tf_random_seed = tf_random_seed
        self.save_summary_steps = save_summary_steps
        self.save_checkpoints_steps = save_checkpoints_steps
        self.save_checkpoints_secs = save_checkpoints_secs
        self.keep_checkpoint_max = keep_checkpoint_max
        self.keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self.log_step_count_steps = log_step_count_steps

    def replace(self, **changes: Any) -> "RunConfig":
        values = dict(vars(self))
        if "save_checkpoints_steps" in changes and "save_checkpoints_secs" not in changes:
            values["save_checkpoints_secs"] = None
        values.update(changes)
        return RunConfig(**values)

    @property
    def saves_checkpoints(self) -> bool:
        return self.save_checkpoints_steps is not None or self.save_checkpoints_secs is not None

    def with_model_dir(self, model_dir: str | None) -> "RunConfig":
        """This config with its model_dir settled: given, or a new temporary folder."""
        chosen = model_dir or self.model_dir
        if chosen is None:
            chosen = tempfile.mkdtemp()
            logging.warning("Using temporary folder as model directory: %s", chosen)
        config = RunConfig.__new__(RunConfig)
        config.__dict__.update(vars(self), model_dir=chosen)
        return config

    def __repr__(self) -> str:
        return f"RunConfig({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"
