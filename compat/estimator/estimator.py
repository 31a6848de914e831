"""tf.estimator.Estimator: what every engine shares (model folder, config, checkpoints).

`model_to_estimator` returns a `KerasEstimator` (compat/estimator/keras_lib.py),
which trains a compiled Keras model eagerly. `Estimator(model_fn=...)` with a
custom model_fn is not supported yet.
"""

from __future__ import annotations

import os
from typing import Callable

import numpy as np
import tensorflow as tf

from compat.estimator.run_config import RunConfig


class Estimator:
    """tf.estimator.Estimator: the model folder, config and checkpoints of an engine."""

    def __init__(self, model_fn: Callable | None = None, model_dir: str | None = None,
                 config: RunConfig | None = None, params: dict | None = None, warm_start_from=None):
        raise NotImplementedError(
            "compat.estimator runs Keras models only: Estimator(model_fn=...) with a custom model_fn "
            "is not supported. Build the model in Keras, compile it, and call "
            "compat.estimator.model_to_estimator(keras_model=model, model_dir=..., config=...)"
        )

    def _init_common(self, model_dir: str | None, config: RunConfig | None, params: dict | None) -> None:
        self._config = (config or RunConfig()).with_model_dir(model_dir)
        self._params = dict(params or {})
        os.makedirs(self.model_dir, exist_ok=True)

    # -- properties, as tf.estimator ------------------------------------------
    @property
    def model_dir(self) -> str:
        return self._config.model_dir

    @property
    def config(self) -> RunConfig:
        return self._config

    @property
    def params(self) -> dict:
        return dict(self._params)

    def latest_checkpoint(self) -> str | None:
        return tf.train.latest_checkpoint(self.model_dir)

    def get_variable_names(self) -> list[str]:
        return [name for name, _ in tf.train.list_variables(self._require_checkpoint())]

    def get_variable_value(self, name: str) -> np.ndarray:
        return tf.train.load_variable(self._require_checkpoint(), name)

    def _require_checkpoint(self) -> str:
        latest = self.latest_checkpoint()
        if latest is None:
            raise ValueError(f"Could not find trained model in model_dir: {self.model_dir}.")
        return latest
