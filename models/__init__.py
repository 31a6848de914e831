"""Model registry: `models.build(name, input_shape, num_classes, **hparams)`.

Every model is an uncompiled Keras 3 model whose single input is named after
the builder's feature key (so a `{feature_key: features}` batch feeds it by
name) and whose output is logits `[batch, num_classes]`. Inputs are the
builder's `[frames, bins]` features.

Hyperparameters a tuner may search, for every model:
  width    filters of the first convolution (later ones scale from it)
  depth    number of convolution blocks after the first
  dropout  dropout rate before the classifier
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import keras
from keras import layers

_REGISTRY: dict[str, Callable[..., keras.Model]] = {}
# Batch-norm statistics follow the weights within tens of steps, not hundreds:
# short CPU runs evaluate with stale statistics under Keras' default of 0.99.
_BN_MOMENTUM = 0.9


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """The model and its hyperparameters; None leaves a model's own default."""

    name: str = "cnn"
    width: int | None = None
    depth: int | None = None
    dropout: float | None = None

    def __post_init__(self) -> None:
        if self.name not in _REGISTRY:
            raise ValueError(f"model '{self.name}' is not registered; choose one of {names()}")
        if (self.width is not None and self.width < 1) or (self.depth is not None and self.depth < 0):
            raise ValueError(f"need width >= 1 and depth >= 0, got {self}")
        if self.dropout is not None and not 0 <= self.dropout < 1:
            raise ValueError(f"need 0 <= dropout < 1, got {self.dropout}")

    @property
    def hparams(self) -> dict:
        """The hyperparameters that were set, as keyword arguments for `build`."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "name" and v is not None}


def register(name: str):
    def add(builder: Callable[..., keras.Model]) -> Callable[..., keras.Model]:
        _REGISTRY[name] = builder
        return builder

    return add


def names() -> list[str]:
    return sorted(_REGISTRY)


def build(name: str, input_shape: tuple[int, int], num_classes: int, *, input_name: str = "audio",
          **hparams) -> keras.Model:
    """An uncompiled model from the registry; `hparams` are the ModelConfig fields."""
    if name not in _REGISTRY:
        raise ValueError(f"model '{name}' is not registered; choose one of {names()}")
    inputs = keras.Input(shape=tuple(input_shape), name=input_name)
    logits = _REGISTRY[name](inputs, num_classes, **hparams)
    # A dict input: batches {feature_key: x} match it by name, and the serving signature names it.
    return keras.Model({input_name: inputs}, logits, name=name)


def build_from_config(config: ModelConfig, input_shape: tuple[int, int], num_classes: int,
                      input_name: str = "audio") -> keras.Model:
    return build(config.name, input_shape, num_classes, input_name=input_name, **config.hparams)


def _conv_bn_relu(x, conv: layers.Layer):
    x = conv(x)
    x = layers.BatchNormalization(momentum=_BN_MOMENTUM)(x)
    return layers.ReLU()(x)


def _classifier(x, num_classes: int, dropout: float):
    x = layers.Dropout(dropout)(x)
    return layers.Dense(num_classes, name="logits")(x)


@register("cnn")
def cnn(inputs, num_classes: int, width: int = 32, depth: int = 3, dropout: float = 0.2):
    """A small 2-D CNN over (time, frequency): conv-BN-ReLU-pool blocks, widths doubling.

    The first block pools early, so the costly wide layers see a small map:
    that keeps it within minutes on two CPU cores.
    """
    x = layers.Reshape((*inputs.shape[1:], 1))(inputs)
    x = layers.BatchNormalization(momentum=_BN_MOMENTUM)(x)  # log features have a large offset
    for block in range(depth + 1):
        filters = width * 2 ** min(block, 2)
        x = _conv_bn_relu(x, layers.Conv2D(filters, 3, padding="same", use_bias=False))
        x = layers.MaxPooling2D(2, padding="same")(x)
    x = layers.GlobalAveragePooling2D()(x)
    return _classifier(x, num_classes, dropout)


@register("dscnn")
def dscnn(inputs, num_classes: int, width: int = 64, depth: int = 4, dropout: float = 0.2):
    """Depthwise-separable CNN for keyword spotting (Zhang et al. 2017, "Hello Edge").

    A strided 10x4 convolution, then `depth` blocks of depthwise 3x3 +
    pointwise 1x1 convolutions, global average pooling, and a linear classifier.
    """
    x = layers.Reshape((*inputs.shape[1:], 1))(inputs)
    x = layers.BatchNormalization(momentum=_BN_MOMENTUM)(x)
    x = _conv_bn_relu(x, layers.Conv2D(width, (10, 4), strides=2, padding="same", use_bias=False))
    for _ in range(depth):
        x = _conv_bn_relu(x, layers.DepthwiseConv2D(3, padding="same", use_bias=False))
        x = _conv_bn_relu(x, layers.Conv2D(width, 1, use_bias=False))
    x = layers.GlobalAveragePooling2D()(x)
    return _classifier(x, num_classes, dropout)


@register("conv1d")
def conv1d(inputs, num_classes: int, width: int = 64, depth: int = 3, dropout: float = 0.2):
    """1-D convolutions over time, the feature bins as channels.

    On the raw waveform (`--feature=waveform`, one channel) the first layer is a
    wide strided filter bank (80 samples, stride 4); on spectral features it is
    a temporal CNN in the style of TC-ResNet (Choi et al. 2019), about ten
    times cheaper than a 2-D CNN on the same features.
    """
    raw_audio = inputs.shape[-1] == 1
    x = layers.LayerNormalization()(inputs)
    if raw_audio:
        x = _conv_bn_relu(x, layers.Conv1D(width, 80, strides=4, padding="same", use_bias=False))
        x = layers.MaxPooling1D(4, padding="same")(x)
    else:
        x = _conv_bn_relu(x, layers.Conv1D(width, 3, padding="same", use_bias=False))
    for block in range(depth):
        filters = int(width * 1.5 ** (block + 1))
        x = _conv_bn_relu(x, layers.Conv1D(filters, 3, padding="same", use_bias=False))
        x = layers.MaxPooling1D(4 if raw_audio else 2, padding="same")(x)
    x = layers.GlobalAveragePooling1D()(x)
    return _classifier(x, num_classes, dropout)
