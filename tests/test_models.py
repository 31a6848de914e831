"""Every registered model builds from the registry and trains a step on builder-shaped input."""

import numpy as np
import pytest

import models
from compat.data import PipelineConfig, feature_shape
from compat.modes.run import compile_model


@pytest.mark.parametrize("name", models.names())
@pytest.mark.parametrize("feature", ["log_mel", "waveform"])
def test_every_model_builds_and_trains_one_step(name, feature):
    shape = feature_shape(PipelineConfig(feature=feature, clip_seconds=0.25))
    model = models.build(name, shape, 5, input_name="audio", width=4, depth=1, dropout=0.1)
    assert tuple(model.inputs[0].shape) == (None, *shape) and model.inputs[0].name == "audio"
    assert model.output_shape == (None, 5)
    compile_model(model, 1e-3, 10)
    features = np.random.default_rng(0).standard_normal((4, *shape)).astype("float32")
    before = [w.copy() for w in model.get_weights()]
    history = model.fit({"audio": features}, np.arange(4) % 5, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert any(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))


def test_the_registry_lists_exactly_the_architectures():
    import inspect

    from models import architectures

    public = {name for name, value in vars(architectures).items()
              if inspect.isfunction(value) and not name.startswith("_")}
    assert public == set(models.NAMES)


def test_unknown_models_and_bad_hyperparameters_are_named():
    assert {"cnn", "dscnn", "conv1d"} <= set(models.names())
    with pytest.raises(ValueError, match="model 'resnet' is not registered"):
        models.ModelConfig("resnet")
    with pytest.raises(ValueError, match="dropout"):
        models.ModelConfig("cnn", dropout=1.5)
