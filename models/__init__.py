"""Model registry: `models.build(name, input_shape, num_classes, **hparams)`.

Every model is an uncompiled Keras 3 model whose single input is named after
the builder's feature key (so a `{feature_key: features}` batch feeds it by
name) and whose output is logits `[batch, num_classes]`. Inputs are the
builder's `[frames, bins]` features. The architectures live in
`models/architectures.py`, imported (with Keras) only when a model is built,
so that the flags and configs load without TensorFlow.

Hyperparameters a tuner may search, for every model:
  width    filters of the first convolution (later ones scale from it)
  depth    number of convolution blocks after the first
  dropout  dropout rate before the classifier
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import keras

# name -> function in models.architectures
NAMES = ("cnn", "conv1d", "dscnn")


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """The model and its hyperparameters; None leaves a model's own default."""

    name: str = "conv1d"
    width: int | None = None
    depth: int | None = None
    dropout: float | None = None

    def __post_init__(self) -> None:
        if self.name not in NAMES:
            raise ValueError(f"model '{self.name}' is not registered; choose one of {names()}")
        if (self.width is not None and self.width < 1) or (self.depth is not None and self.depth < 0):
            raise ValueError(f"need width >= 1 and depth >= 0, got {self}")
        if self.dropout is not None and not 0 <= self.dropout < 1:
            raise ValueError(f"need 0 <= dropout < 1, got {self.dropout}")

    @property
    def hparams(self) -> dict:
        """The hyperparameters that were set, as keyword arguments for `build`."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "name" and v is not None}


def names() -> list[str]:
    return sorted(NAMES)


def build(
    name: str, input_shape: tuple[int, int], num_classes: int, *, input_name: str = "audio", **hparams
) -> keras.Model:
    """An uncompiled model from the registry; `hparams` are the ModelConfig fields."""
    if name not in NAMES:
        raise ValueError(f"model '{name}' is not registered; choose one of {names()}")
    import keras

    architecture = getattr(importlib.import_module("models.architectures"), name)
    inputs = keras.Input(shape=tuple(input_shape), name=input_name)
    logits = architecture(inputs, num_classes, **hparams)
    # A dict input: batches {feature_key: x} match it by name, and the serving signature names it.
    return keras.Model({input_name: inputs}, logits, name=name)


def build_from_config(
    config: ModelConfig, input_shape: tuple[int, int], num_classes: int, input_name: str = "audio"
) -> keras.Model:
    return build(config.name, input_shape, num_classes, input_name=input_name, **config.hparams)
