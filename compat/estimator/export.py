"""tf.estimator.export's receiver helpers, so legacy exporter code keeps working.

A Keras model exports its own input signature, so a receiver is accepted and
not needed: `export_saved_model` logs that and exports the model's signature
(`serving_default`, inputs named after the model's inputs).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable


@dataclasses.dataclass(frozen=True)
class ServingInputReceiver:
    features: Any
    receiver_tensors: Any
    receiver_tensors_alternatives: Any = None


def build_raw_serving_input_receiver_fn(features: Any, default_batch_size: int | None = None) -> Callable:
    def serving_input_receiver_fn() -> ServingInputReceiver:
        return ServingInputReceiver(features, features)

    return serving_input_receiver_fn


def build_parsing_serving_input_receiver_fn(feature_spec: Any, default_batch_size: int | None = None) -> Callable:
    def serving_input_receiver_fn() -> ServingInputReceiver:
        return ServingInputReceiver(feature_spec, feature_spec)

    return serving_input_receiver_fn
