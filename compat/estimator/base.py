"""What both engines of tf.estimator share: the model folder, the config and params, the checkpoint reads,
the argument checks of train/predict, and the evaluation summaries TF 2.15 wrote.

`EstimatorBase` is the base of the graph engine (`Estimator`, estimator.py)
and of the Keras engine (`KerasEstimator`, keras_engine/), which are siblings:
neither inherits the other's machinery. `Estimator` is what users subclass
and test with isinstance; the Keras engine is registered with it
(`Estimator.register`), so `model_to_estimator(...)` is an instance of
`tf.estimator.Estimator` after install(), as in TF 2.15.
"""

from __future__ import annotations

import abc
import contextlib
import copy
import os
import random
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, Protocol

import numpy as np
import tensorflow as tf

from compat.estimator import input_cache
from compat.estimator.run_config import RunConfig

_v1 = tf.compat.v1


@contextlib.contextmanager
def seeded_python_random(seed: int | None) -> Iterator[None]:
    """Python's `random` seeded for a moment, then put back (nothing when `seed` is None).

    Keras 2's and Keras 3's initializers made without a seed (a layer's default `glorot_uniform`) each draw one
    from Python's `random`: seeded with RunConfig's `tf_random_seed` while a model is built, two runs with the
    same seed start from the same weights (TF 2.15's model_fns did not).
    """
    if seed is None:
        yield
        return
    state = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(state)


def default_session_config() -> tf.compat.v1.ConfigProto:
    """TF 2.15's session config for an Estimator: soft placement, one pass of the graph optimizers."""
    config = _v1.ConfigProto(allow_soft_placement=True)
    config.graph_options.rewrite_options.meta_optimizer_iterations = 1  # RewriterConfig.ONE
    return config


def config_with_model_dir(config: RunConfig | None, model_dir: Any) -> RunConfig:
    """The Estimator's copy of `config`, with its model_dir (a temporary folder if none) and a session config.

    `replace` deep-copies, so a RunConfig subclass, and attributes set on it,
    reach the model_fn as they were given.
    """
    if config is None:
        config = RunConfig()
        tf.compat.v1.logging.info("Using default config.")
    if not isinstance(config, RunConfig):
        raise ValueError(f"config must be an instance of `RunConfig`, but provided {config}.")
    if config.session_config is None:
        config = config.replace(session_config=default_session_config())
    model_dir = os.fspath(model_dir) if model_dir is not None else None
    if model_dir is not None and config.model_dir is not None and config.model_dir != model_dir:
        raise ValueError(
            "`model_dir` are set both in constructor and `RunConfig`, but with different values. In "
            f"constructor: '{model_dir}', in `RunConfig`: '{config.model_dir}' "
        )
    if model_dir:
        return config.replace(model_dir=model_dir)
    if config.model_dir is None:
        model_dir = tempfile.mkdtemp()
        tf.compat.v1.logging.warning("Using temporary folder as model directory: %s", model_dir)
        return config.replace(model_dir=model_dir)
    return config


def check_train_steps(steps: int | None, max_steps: int | None) -> None:
    """`train()`'s `steps` (relative) and `max_steps` (absolute): at most one, positive; TF 2.15's messages."""
    if steps is not None and max_steps is not None:
        raise ValueError("Can not provide both steps and max_steps.")
    if steps is not None and steps <= 0:
        raise ValueError(f"Must specify steps > 0, given: {steps}")
    if max_steps is not None and max_steps <= 0:
        raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")


def check_checkpoint_exists(checkpoint_path: str) -> None:
    """TF 2.15's ValueError for a `checkpoint_path=` that names no checkpoint (a typo, or one that
    `keep_checkpoint_max` has deleted), before anything is built or read."""
    if not (tf.io.gfile.exists(checkpoint_path + ".index") or tf.io.gfile.exists(checkpoint_path)):
        raise ValueError(f"The passed save_path is not a valid checkpoint: {checkpoint_path}")


def check_checkpoint_available(model_dir: str) -> None:
    """TF 2.15's ValueError where `model_dir` holds no checkpoint (what predicting or exporting a model needs)."""
    if not tf.train.latest_checkpoint(model_dir):
        raise ValueError(f"Could not find trained model in model_dir: {model_dir}.")


def timestamped_dir(base: str) -> str:
    """`<base>/<int(time.time())>`, a second later while that name is taken, as TF 2.15."""
    for attempt in range(10):
        path = os.path.join(base, str(int(time.time())))
        if not tf.io.gfile.exists(path):  # tf.io.gfile: model folders may be on gs://, ram://, ...
            return path
        tf.compat.v1.logging.warning("Directory %s already exists; retrying (attempt %d/10)", path, attempt + 1)
        time.sleep(1)
    raise RuntimeError(f"Failed to obtain a unique export directory name under {base} after 10 attempts.")


def write_dict_to_summary(output_dir: str, dictionary: dict, current_global_step: int) -> None:
    """An evaluation's results (`dictionary`) as one summary event in `output_dir`, as TF 2.15 wrote them.

    Numbers become scalars; a serialized `Summary` (an image or histogram
    summary returned as a metric) is written as its values, tagged
    `<key>/<i>`; an array becomes a tensor summary; `current_global_step` is the
    event's step, not a value.
    """
    from google.protobuf import message

    shown = ", ".join(f"{key} = {value!s}" for key, value in sorted(dictionary.items()) if not isinstance(value, bytes))
    tf.compat.v1.logging.info("Saving dict for global step %d: %s", current_global_step, shown)
    summary = _v1.Summary()
    for key, value in dictionary.items():
        if value is None or key == "global_step":
            continue
        if isinstance(value, (np.floating, float)):
            summary.value.add(tag=key, simple_value=float(value))
        elif isinstance(value, (np.integer, int)) and not isinstance(value, bool):
            summary.value.add(tag=key, simple_value=int(value))
        elif isinstance(value, bytes):
            try:
                parsed = _v1.Summary.FromString(value)
            except message.DecodeError:
                tf.compat.v1.logging.warning("Skipping summary for %s, cannot parse string to Summary.", key)
                continue
            for index, item in enumerate(parsed.value):
                item.tag = f"{key}/{index}"
            summary.value.extend(parsed.value)
        elif isinstance(value, np.ndarray):
            item = summary.value.add(tag=key, node_name=key)
            item.tensor.CopyFrom(tf.make_tensor_proto(value))
        else:
            tf.compat.v1.logging.warning(
                "Skipping summary for %s, must be a float, np.float32, np.int64, np.int32 or int or "
                "np.ndarray or a serialized string of Summary.",
                key,
            )
    writer = _summary_writer(output_dir)
    writer.add_summary(summary, current_global_step)
    writer.flush()


def write_checkpoint_path_to_summary(output_dir: str, checkpoint_path: str, current_global_step: int) -> None:
    """The evaluated checkpoint's path as a string tensor summary `checkpoint_path` (BestExporter reads it)."""
    tf.compat.v1.logging.info(
        "Saving 'checkpoint_path' summary for global step %d: %s", current_global_step, checkpoint_path
    )
    summary = _v1.Summary()
    summary.value.add(tag="checkpoint_path", tensor=tf.make_tensor_proto(checkpoint_path, dtype=tf.string))
    writer = _summary_writer(output_dir)
    writer.add_summary(summary, current_global_step)
    writer.flush()


def _summary_writer(folder: str):
    with tf.Graph().as_default():  # the v1 writer cache refuses to open a writer eagerly
        return _v1.summary.FileWriterCache.get(folder)


def extract_keys(predictions: Any, predict_keys: Sequence[str] | None) -> Any:
    """The predictions named in `predict_keys` that exist, as TF 2.15; an error if none does."""
    if not predict_keys:
        return predictions
    if not isinstance(predictions, dict):
        raise ValueError("predict_keys argument is not valid in case of non-dict predictions.")
    kept = {key: value for key, value in predictions.items() if key in predict_keys}
    if not kept:
        raise ValueError(f"Expected to run at least one output from {list(predictions)}, provided {predict_keys}.")
    return kept


def _batch_length(values: dict) -> int:
    lengths = {key: value.shape[0] for key, value in values.items() if np.ndim(value) > 0}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"Batch length of predictions should be same. {lengths}")
    return next(iter(lengths.values())) if lengths else 1


def per_example(values: dict):
    """Yields one `{key: value[i]}` per example of a batch of predictions (all keys of one batch length)."""
    for index in range(_batch_length(values)):
        yield {key: value[index] for key, value in values.items()}


class KerasEngineEstimator(Protocol):
    """What train_and_evaluate reads of an Estimator whose `engine` is "keras" (keras_engine/), besides
    EstimatorBase's."""

    @property
    def strategy(self) -> tf.distribute.Strategy | None: ...


class EstimatorBase(abc.ABC):
    """The model folder, config and params of an Estimator, and what its checkpoints hold; each engine
    implements train, evaluate, predict and export_saved_model.

    What the rest of the library asks of an Estimator, whichever engine runs it (instead of type checks):

    Attributes:
      engine: "graph" (tf.compat.v1 graphs and sessions: model_fns, the canned classes) or "keras" (a
        model_to_estimator Estimator, Keras 3 eagerly); train_and_evaluate's cluster training differs.
      keras_recipe: what `to_keras` builds a native Keras model from (a canned class's
        canned/recipe.py's CannedRecipe), else None.

    A Keras-engine Estimator also has `strategy` (KerasEngineEstimator). None of these names was TF 2.15's:
    a user's subclass that defines one of its own is not refused (estimator.py's override check).
    """

    engine: ClassVar[str] = "graph"
    keras_recipe: Any = None

    def trained_keras_model(self, checkpoint_path: str | None = None, keras_2: bool | None = None) -> Any:
        """The Keras model this Estimator trained, with its weights (a model_to_estimator Estimator's: Keras 2
        where it was made from a Keras 2 model, or as `keras_2` says), else None: `to_keras` converts the
        others from their recipe or their export."""
        del checkpoint_path, keras_2
        return None

    @abc.abstractmethod
    def train(self, input_fn: Callable, hooks=None, steps=None, max_steps=None, saving_listeners=None) -> Any: ...

    @abc.abstractmethod
    def evaluate(self, input_fn: Callable, steps=None, hooks=None, checkpoint_path=None, name=None) -> dict: ...

    @abc.abstractmethod
    def predict(
        self, input_fn: Callable, predict_keys=None, hooks=None, checkpoint_path=None, yield_single_examples=True
    ) -> Iterator: ...

    @abc.abstractmethod
    def export_saved_model(
        self, export_dir_base: str, serving_input_receiver_fn, assets_extra=None, as_text=False, checkpoint_path=None
    ) -> bytes: ...

    def _init_base(self, model_dir: str | None, config: RunConfig | None, params: dict | None) -> None:
        self._config = config_with_model_dir(config, model_dir)
        self._model_dir = self._config.model_dir
        self._params = copy.deepcopy(params or {})
        settings = input_cache.settings_from(getattr(self._config, "input_cache", None))
        self._input_cache = input_cache.PROCESS_CACHES.for_settings(settings)
        tf.compat.v1.logging.info("Using config: %s", str(vars(self._config)))

    @property
    def model_dir(self) -> str:
        return self._model_dir

    @property
    def config(self) -> RunConfig:
        return copy.deepcopy(self._config)

    @property
    def params(self) -> dict:
        return copy.deepcopy(self._params)

    def eval_dir(self, name: str | None = None) -> str:
        return os.path.join(self._model_dir, "eval" if not name else f"eval_{name}")

    def latest_checkpoint(self) -> str | None:
        return tf.train.latest_checkpoint(self._model_dir)

    def get_variable_names(self) -> list[str]:
        return [name for name, _ in tf.train.list_variables(self._require_checkpoint())]

    def get_variable_value(self, name: str) -> np.ndarray:
        return tf.train.load_variable(self._require_checkpoint(), name)

    def _require_checkpoint(self) -> str:
        latest = self.latest_checkpoint()
        if latest is None:
            raise ValueError(f"Could not find trained model in model_dir: {self._model_dir}.")
        return latest

    def _checkpoint_step(self) -> int:
        """The global step of the latest checkpoint; 0 without one."""
        latest = self.latest_checkpoint()
        if latest is None:
            return 0
        try:
            return int(tf.train.load_variable(latest, "global_step"))
        except (tf.errors.NotFoundError, ValueError):
            return int(latest.rsplit("-", 1)[1])
