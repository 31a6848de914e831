"""tf.estimator.Estimator: the graph engine for custom model_fns, with TF 2.15's semantics.

`Estimator(model_fn, model_dir, config, params, warm_start_from)` runs a
model_fn written for tf.estimator on what TensorFlow >= 2.16 still ships: a
`tf.compat.v1.Graph` per call, `MonitoredTrainingSession` with TensorFlow's own
hooks (checkpoints, summaries, step counter, NaN check, loss logging), a
name-based `Saver`, and `SavedModelBuilder` for exports. The files are TF
2.15's, so model folders written by TF 2.15 restore and train on:

  <model_dir>/model.ckpt-<step>.{index,data-*,meta}, checkpoint, graph.pbtxt
  <model_dir>/events.out.tfevents.*           loss, global_step/sec, the model's summaries
  <model_dir>/eval[_<name>]/events.out.tfevents.*   metrics and checkpoint_path
  <export_dir_base>/<timestamp>/              SavedModel

`model_to_estimator` returns a `KerasEstimator` (compat/estimator/keras_lib.py),
which trains a Keras 3 model eagerly; it shares this class's public methods
that concern the model folder.
"""

from __future__ import annotations

import collections
import contextlib
import inspect
import os
import shutil
import sys
import time
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from compat import atomic
from compat.checkpoints import newest_readable_in
from compat.estimator.export import export as export_lib
from compat.estimator import warm_starting
from compat.estimator.input_fns import input_fn_kwargs, split_features_labels
from compat.estimator.model_fn import EstimatorSpec, ModeKeys
from compat.estimator.run_config import RunConfig

_MODEL_FN_ARGS = ("features", "labels", "mode", "params", "config")


def _fn_args(fn: Callable) -> tuple[str, ...]:
    return tuple(inspect.signature(fn).parameters)


def _verify_model_fn(model_fn: Callable, params: dict | None) -> None:
    if not callable(model_fn):
        raise TypeError(f"model_fn must be callable, given: {model_fn!r}")
    args = _fn_args(model_fn)
    if "features" not in args:
        raise ValueError(f"model_fn ({model_fn}) must include features argument.")
    if params is not None and "params" not in args:
        raise ValueError(f"model_fn ({model_fn}) does not include params argument, but params ({params}) are "
                         "passed to Estimator.")
    unknown = [name for name in args if name not in _MODEL_FN_ARGS
               and inspect.signature(model_fn).parameters[name].default is inspect.Parameter.empty
               and inspect.signature(model_fn).parameters[name].kind not in (inspect.Parameter.VAR_POSITIONAL,
                                                                              inspect.Parameter.VAR_KEYWORD)]
    if unknown:
        raise ValueError(f"model_fn ({model_fn}) has following not expected args: {unknown}")


def _default_session_config(config: RunConfig) -> tf.compat.v1.ConfigProto:
    """The RunConfig's session config, else TF 2.15's default for an Estimator."""
    if config.session_config is not None:
        return config.session_config
    session_config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
    session_config.graph_options.rewrite_options.meta_optimizer_iterations = 1  # ONE
    return session_config


@contextlib.contextmanager
def _keras_names_per_graph() -> Iterator[None]:
    """Keras layers made by a model_fn are named afresh in each graph, as Keras 2 named them.

    A model_fn that calls `tf.keras.layers.Dense(...)` is called once per graph
    (training, each evaluation, prediction, export); Keras 2 numbered layer
    names per graph, so each graph gave its variables the checkpoint's names.
    Keras 3 numbers them per process (`dense`, then `dense_3` in the next graph),
    which would make the evaluation graph's names differ from the checkpoint's.
    Keras keeps that count in its global state and offers no public way to
    scope it (`clear_session` resets the default graph too, which a nested
    graph forbids), hence its internal module; the count is restored after.
    """
    if "keras" not in sys.modules:
        yield
        return
    from keras.src.backend.common import global_state

    saved = global_state.get_global_attribute("object_name_uids")
    global_state.set_global_attribute("object_name_uids", collections.defaultdict(int))
    try:
        yield
    finally:
        global_state.set_global_attribute("object_name_uids", saved)


class _DatasetInitializerHook(tf.compat.v1.train.SessionRunHook):
    """Initialises the input_fn's dataset iterator once the session exists."""

    def __init__(self, iterator):
        self._iterator = iterator

    def begin(self):
        self._initializer = self._iterator.initializer

    def after_create_session(self, session, coord):
        del coord
        session.run(self._initializer)


class _StopAfterNEvalsHook(tf.compat.v1.train.SessionRunHook):
    """Stops an evaluation after `num_evals` batches."""

    def __init__(self, num_evals: int | None):
        self._num_evals, self._evals = num_evals, 0

    def after_run(self, run_context, run_values):
        self._evals += 1
        if self._num_evals is not None and self._evals >= self._num_evals:
            run_context.request_stop()


def check_restorable(checkpoint_path: str | None) -> None:
    """A clear error, before any session, when the checkpoint lacks variables the default graph has."""
    if checkpoint_path is None:
        return
    stored = {name for name, _ in tf.train.list_variables(checkpoint_path)}
    needed = {variable.op.name for variable in tf.compat.v1.global_variables()
              if getattr(variable, "_save_slice_info", None) is None}
    missing = sorted(needed - stored)
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise ValueError(
            f"The checkpoint {checkpoint_path} was written by another model: it lacks {shown}. Train this model in a "
            "new model_dir, or reuse the matching part with warm_start_from=WarmStartSettings(<that folder>, "
            "vars_to_warm_start=...)")


def _check_hooks(hooks: Iterable | None) -> list:
    hooks = list(hooks or ())
    for hook in hooks:
        if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
            raise TypeError(f"All hooks must be SessionRunHook instances, given: {hook!r}")
    return hooks


def _check_listeners(listeners: Iterable | None) -> list:
    listeners = list(listeners or ())
    for listener in listeners:
        if not isinstance(listener, tf.compat.v1.train.CheckpointSaverListener):
            raise TypeError(f"saving_listeners must be a list of CheckpointSaverListener, given: {listener!r}")
    return listeners


def check_train_steps(steps: int | None, max_steps: int | None) -> None:
    """`train()`'s `steps` (relative) and `max_steps` (absolute): at most one, positive; TF 2.15's messages."""
    if steps is not None and max_steps is not None:
        raise ValueError("Can not provide both steps and max_steps.")
    if steps is not None and steps <= 0:
        raise ValueError(f"Must specify steps > 0, given: {steps}")
    if max_steps is not None and max_steps <= 0:
        raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")


def timestamped_dir(base: str) -> str:
    """`<base>/<int(time.time())>`, a second later while that name is taken, as TF 2.15."""
    for attempt in range(10):
        path = os.path.join(base, str(int(time.time())))
        if not tf.io.gfile.exists(path):  # tf.io.gfile: model folders may be on gs://, ram://, ...
            return path
        logging.warning("Directory %s already exists; retrying (attempt %d/10)", path, attempt + 1)
        time.sleep(1)
    raise RuntimeError(f"Failed to obtain a unique export directory name under {base} after 10 attempts.")


def _write_summaries(folder: str, values: dict, step: int, checkpoint_path: str | None) -> None:
    """The evaluation's scalars (and the checkpoint's path, as a string tensor) in `folder`'s events."""
    summary = tf.compat.v1.Summary()
    for key, value in values.items():
        if key == "global_step":
            continue
        if isinstance(value, (np.floating, np.integer, float, int, bool, np.bool_)):
            summary.value.add(tag=key, simple_value=float(value))
        elif isinstance(value, np.ndarray) and value.size == 1:
            summary.value.add(tag=key, simple_value=float(value.reshape(())))
    if checkpoint_path is not None:
        summary.value.add(tag="checkpoint_path", tensor=tf.make_tensor_proto(checkpoint_path, dtype=tf.string))
        logging.info("Saving 'checkpoint_path' summary for global step %d: %s", step, checkpoint_path)
    with tf.Graph().as_default():  # the v1 writer cache refuses to open a writer eagerly
        writer = tf.compat.v1.summary.FileWriterCache.get(folder)
    writer.add_summary(summary, step)
    writer.flush()


class Estimator:
    """tf.estimator.Estimator: trains, evaluates, predicts and exports with a model_fn."""

    def __init__(self, model_fn: Callable, model_dir: str | None = None, config: RunConfig | None = None,
                 params: dict | None = None, warm_start_from: Any = None):
        if config is not None and not isinstance(config, RunConfig):
            raise ValueError(f"config must be an instance of RunConfig, but provided {config!r}.")
        _verify_model_fn(model_fn, params)
        self._model_fn = model_fn
        self._init_common(model_dir, config, params)
        self._warm_start_settings = warm_starting.settings_from(warm_start_from)

    def _init_common(self, model_dir: str | None, config: RunConfig | None, params: dict | None) -> None:
        self._config = (config or RunConfig()).with_model_dir(model_dir)
        self._params = dict(params or {})
        tf.io.gfile.makedirs(self.model_dir)

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

    @property
    def model_fn(self) -> Callable:
        """The model_fn with this Estimator's params bound: `model_fn(features, labels, mode, config)`."""

        def public_model_fn(features, labels, mode, config):
            return self._call_model_fn(features, labels, mode, config)

        return public_model_fn

    def eval_dir(self, name: str | None = None) -> str:
        return os.path.join(self.model_dir, "eval" if not name else f"eval_{name}")

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

    def _checkpoint_step(self) -> int:
        latest = self.latest_checkpoint()
        if latest is None:
            return 0
        try:
            return int(tf.train.load_variable(latest, "global_step"))
        except (tf.errors.NotFoundError, ValueError):
            return int(latest.rsplit("-", 1)[1])

    # -- graph building -------------------------------------------------------
    def _call_model_fn(self, features: Any, labels: Any, mode: str, config: RunConfig) -> EstimatorSpec:
        args = _fn_args(self._model_fn)
        kwargs = {}
        if "labels" in args:
            kwargs["labels"] = labels
        elif labels is not None:
            raise ValueError("model_fn does not take labels, but input_fn returns labels.")
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = config
        logging.info("Calling model_fn.")
        spec = self._model_fn(features=features, **kwargs)
        logging.info("Done calling model_fn.")
        if not isinstance(spec, EstimatorSpec):
            raise ValueError(f"model_fn should return an EstimatorSpec, but it returned {type(spec).__name__} "
                             f"in {mode} mode")
        if spec.mode != mode:
            logging.warning("model_fn returned an EstimatorSpec for mode %r when called in mode %r", spec.mode, mode)
        return spec

    def _features_and_labels(self, input_fn: Callable, mode: str) -> tuple[Any, Any, list]:
        """Calls `input_fn` in the current graph; a Dataset gets an iterator initialised by a hook."""
        kwargs = input_fn_kwargs(input_fn, params=self.params, mode=mode, config=self.config, input_context=None)
        logging.info("Calling input_fn.")
        result = input_fn(**kwargs)
        logging.info("Done calling input_fn.")
        hooks = []
        if isinstance(result, tf.data.Dataset):
            iterator = tf.compat.v1.data.make_initializable_iterator(result)
            hooks.append(_DatasetInitializerHook(iterator))
            result = iterator.get_next()
        features, labels = split_features_labels(result)
        if mode == ModeKeys.PREDICT:
            labels = None
        return features, labels, hooks

    @contextlib.contextmanager
    def _new_graph(self) -> Iterator[tf.Graph]:
        """A new graph as the default one, seeded, with a global step, and fresh Keras layer names."""
        graph = tf.Graph()
        with graph.as_default(), _keras_names_per_graph():
            if self.config.tf_random_seed is not None:
                tf.compat.v1.set_random_seed(self.config.tf_random_seed)
            tf.compat.v1.train.get_or_create_global_step()
            yield graph

    def _scaffold(self, spec: EstimatorSpec) -> tf.compat.v1.train.Scaffold:
        """The spec's scaffold, with TF 2.15's default Saver (sharded, relative paths) if it has none."""
        scaffold = spec.scaffold or tf.compat.v1.train.Scaffold()
        if scaffold.saver is None and not tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SAVERS):
            saver = tf.compat.v1.train.Saver(
                sharded=True, max_to_keep=self.config.keep_checkpoint_max,
                keep_checkpoint_every_n_hours=self.config.keep_checkpoint_every_n_hours,
                defer_build=True, save_relative_paths=True)
            tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.SAVERS, saver)
        return scaffold

    def _saver(self, spec: EstimatorSpec) -> tf.compat.v1.train.Saver:
        """The Saver that restores a checkpoint into this graph, built (for an export, which adds to the graph)."""
        saver = spec.scaffold.saver if spec.scaffold is not None and spec.scaffold.saver is not None else None
        if saver is None:
            self._scaffold(spec)
            saver = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SAVERS)[0]
        if saver.saver_def is None:
            saver.build()
        return saver

    # -- train ------------------------------------------------------------------
    def train(self, input_fn: Callable, hooks=None, steps: int | None = None, max_steps: int | None = None,
              saving_listeners=None) -> "Estimator":
        """Trains from the latest checkpoint: `steps` more, or up to the absolute `max_steps`."""
        check_train_steps(steps, max_steps)
        self._check_strategy(self.config.train_distribute)
        if max_steps is not None and self._checkpoint_step() >= max_steps:
            logging.info("Skipping training since max_steps has already saved.")
            return self
        hooks = _check_hooks(hooks)
        if steps is not None or max_steps is not None:
            hooks.append(tf.compat.v1.train.StopAtStepHook(num_steps=steps, last_step=max_steps))
        loss = self._train_model(input_fn, hooks, _check_listeners(saving_listeners))
        logging.info("Loss for final step: %s.", loss)
        return self

    @staticmethod
    def _check_strategy(strategy) -> None:
        """The graph engine trains on one device: a strategy of one replica (MirroredStrategy() on a
        machine with one GPU, or none) trains the same there; more replicas are refused, naming what runs them."""
        from compat import distribution

        if strategy is None:
            return
        if strategy.num_replicas_in_sync == 1 and not distribution.is_multi_worker(strategy):
            logging.info("train_distribute=%s has one replica: the graph engine trains on that device without "
                         "it, with the same result", type(strategy).__name__)
            return
        raise distribution.UnsupportedStrategyError(
            f"RunConfig(train_distribute={type(strategy).__name__}) with {strategy.num_replicas_in_sync} replicas: a "
            "custom model_fn or canned Estimator trains on one device in compat.estimator; strategies of several "
            "replicas run on model_to_estimator Estimators (MirroredStrategy, MultiWorkerMirroredStrategy). "
            "Remove train_distribute, or build the model in Keras")

    def _train_model(self, input_fn: Callable, hooks: list, listeners: list) -> Any:
        config = self.config
        with self._new_graph():
            global_step = tf.compat.v1.train.get_global_step()
            features, labels, input_hooks = self._features_and_labels(input_fn, ModeKeys.TRAIN)
            spec = self._call_model_fn(features, labels, ModeKeys.TRAIN, config)
            if self._warm_start_settings is not None:
                logging.info("Warm-starting with WarmStartSettings: %s", self._warm_start_settings)
                warm_starting.warm_start(self._warm_start_settings)
            tf.compat.v1.summary.scalar("loss", spec.loss)
            # The step this run trained: the global step read after the train op, less its increment. A read
            # fetched beside the train op is not ordered with the increment and may see either value.
            with tf.control_dependencies([spec.train_op]):
                trained_step = tf.identity(global_step.read_value()) - 1
            worker_hooks = [
                tf.compat.v1.train.NanTensorHook(spec.loss),
                *([tf.compat.v1.train.LoggingTensorHook({"loss": spec.loss, "step": trained_step},
                                                        every_n_iter=config.log_step_count_steps)]
                  if config.log_step_count_steps else []),
                *input_hooks, *hooks, *spec.training_hooks,
            ]
            scaffold = self._scaffold(spec)
            check_restorable(newest_readable_in(self.model_dir))  # past a damaged latest, which TF 2.15 could not
            chief_hooks = list(spec.training_chief_hooks)
            given_savers = [h for h in [*hooks, *chief_hooks] if isinstance(h, tf.compat.v1.train.CheckpointSaverHook)]
            if config.saves_checkpoints and not given_savers:
                chief_hooks.append(tf.compat.v1.train.CheckpointSaverHook(
                    self.model_dir, save_secs=config.save_checkpoints_secs,
                    save_steps=config.save_checkpoints_steps, scaffold=scaffold, listeners=listeners,
                    save_graph_def=config.checkpoint_save_graph_def))
            elif listeners and not given_savers:
                raise ValueError("There should be a CheckpointSaverHook to use saving_listeners; turn checkpoints on "
                                 "with RunConfig(save_checkpoints_steps=...) or (save_checkpoints_secs=...)")
            elif listeners:
                given_savers[0]._listeners.extend(listeners)  # TF 2.15 attached them to the user's saver hook too
            loss = None
            with tf.compat.v1.train.MonitoredTrainingSession(
                    master=config.master, is_chief=True, checkpoint_dir=self.model_dir, scaffold=scaffold,
                    hooks=worker_hooks, chief_only_hooks=chief_hooks, save_checkpoint_secs=0,
                    save_summaries_steps=config.save_summary_steps, config=_default_session_config(config),
                    log_step_count_steps=config.log_step_count_steps) as session:
                while not session.should_stop():
                    _, loss = session.run([spec.train_op, spec.loss])
        return loss

    # -- evaluate ----------------------------------------------------------------
    def evaluate(self, input_fn: Callable, steps: int | None = None, hooks=None,
                 checkpoint_path: str | None = None, name: str | None = None) -> dict:
        """Metrics of a checkpoint (default: the latest): eval_metric_ops, `loss` and `global_step`."""
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        hooks = _check_hooks(hooks)
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if checkpoint_path is None:
            logging.info("Could not find trained model in model_dir: %s, running initialization to evaluate.",
                         self.model_dir)
        with self._new_graph():
            global_step = tf.compat.v1.train.get_global_step()
            features, labels, input_hooks = self._features_and_labels(input_fn, ModeKeys.EVAL)
            spec = self._call_model_fn(features, labels, ModeKeys.EVAL, self.config)
            if "loss" in spec.eval_metric_ops:
                raise ValueError("Metric with name `loss` is not allowed, because Estimator already defines a "
                                 "default metric with the same name.")
            metrics = {**spec.eval_metric_ops, "loss": tf.compat.v1.metrics.mean(spec.loss)}
            values, updates = {}, []
            for key, metric in metrics.items():
                if isinstance(metric, tuple):
                    values[key], update = metric
                else:  # a Metric object, updated in the model_fn
                    values[key], update = metric.result(), tf.no_op()
                updates.append(update)
            values["global_step"] = global_step
            update = tf.group(*updates)
            final = tf.compat.v1.train.FinalOpsHook(values)
            check_restorable(checkpoint_path)
            all_hooks = [*input_hooks, *hooks, *spec.evaluation_hooks, _StopAfterNEvalsHook(steps), final]
            creator = tf.compat.v1.train.ChiefSessionCreator(
                scaffold=self._scaffold(spec), checkpoint_filename_with_path=checkpoint_path,
                master=self.config.evaluation_master, config=_default_session_config(self.config))
            logging.info("Starting evaluation at %s", time.strftime("%Y-%m-%dT%H:%M:%S"))
            started = time.time()
            with tf.compat.v1.train.MonitoredSession(session_creator=creator, hooks=all_hooks) as session:
                while not session.should_stop():
                    session.run(update)
            logging.info("Inference Time : %.5fs", time.time() - started)
            logging.info("Finished evaluation at %s", time.strftime("%Y-%m-%d-%H:%M:%S"))
        results = dict(final.final_ops_values)
        step = int(results["global_step"])
        logging.info("Saving dict for global step %d: %s", step,
                     ", ".join(f"{key} = {results[key]}" for key in sorted(results)))
        _write_summaries(self.eval_dir(name), results, step, checkpoint_path)
        return results

    # -- predict -----------------------------------------------------------------
    def predict(self, input_fn: Callable, predict_keys: Sequence[str] | None = None, hooks=None,
                checkpoint_path: str | None = None, yield_single_examples: bool = True) -> Iterator:
        """Yields the model_fn's predictions per example (or per batch), from a checkpoint."""
        hooks = _check_hooks(hooks)
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if checkpoint_path is None:
            logging.info("Could not find trained model in model_dir: %s, running initialization to predict.",
                         self.model_dir)
        with self._new_graph():
            features, _, input_hooks = self._features_and_labels(input_fn, ModeKeys.PREDICT)
            spec = self._call_model_fn(features, None, ModeKeys.PREDICT, self.config)
            predictions = _extract_keys(spec.predictions, predict_keys)
            check_restorable(checkpoint_path)
            creator = tf.compat.v1.train.ChiefSessionCreator(
                scaffold=self._scaffold(spec), checkpoint_filename_with_path=checkpoint_path,
                master=self.config.master, config=_default_session_config(self.config))
            with tf.compat.v1.train.MonitoredSession(
                    session_creator=creator, hooks=[*input_hooks, *hooks, *spec.prediction_hooks]) as session:
                while not session.should_stop():
                    values = session.run(predictions)
                    if not yield_single_examples:
                        yield values
                    elif not isinstance(values, dict):
                        yield from values
                    else:
                        for index in range(_batch_length(values)):
                            yield {key: value[index] for key, value in values.items()}

    # -- export ------------------------------------------------------------------
    def export_saved_model(self, export_dir_base: str, serving_input_receiver_fn: Callable,
                           assets_extra: dict | None = None, as_text: bool = False,
                           checkpoint_path: str | None = None, experimental_mode: str = ModeKeys.PREDICT) -> bytes:
        """Writes `<export_dir_base>/<timestamp>` (built under a temporary name); returns that path."""
        if not serving_input_receiver_fn:
            raise ValueError("An input_receiver_fn must be defined.")
        if experimental_mode != ModeKeys.PREDICT:
            raise NotImplementedError("experimental_mode other than PREDICT is not supported by compat.estimator")
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if checkpoint_path is None:
            raise ValueError(f"Couldn't find trained model at {self.model_dir}.")
        export_dir = timestamped_dir(export_dir_base)

        def build(folder: str) -> None:
            saved = os.path.join(folder, "saved_model")  # the builder needs a folder that does not exist yet
            with self._new_graph() as graph:
                receiver = serving_input_receiver_fn()
                spec = self._call_model_fn(receiver.features, None, ModeKeys.PREDICT, self.config)
                signatures = export_lib.build_all_signature_defs(receiver.receiver_tensors, spec.export_outputs,
                                                                 receiver.receiver_tensors_alternatives)
                saver = self._saver(spec)
                main_op = tf.group(tf.compat.v1.local_variables_initializer(), tf.compat.v1.tables_initializer())
                with tf.compat.v1.Session(graph=graph, config=_default_session_config(self.config)) as session:
                    saver.restore(session, checkpoint_path)
                    builder = tf.compat.v1.saved_model.Builder(saved)
                    builder.add_meta_graph_and_variables(
                        session, [tf.saved_model.SERVING], signature_def_map=signatures,
                        assets_collection=tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.ASSET_FILEPATHS),
                        main_op=main_op, saver=saver, strip_default_attrs=True)
                    builder.save(as_text)
            for name in os.listdir(saved):
                os.rename(os.path.join(saved, name), os.path.join(folder, name))
            os.rmdir(saved)
            for relative, source in dict(assets_extra or {}).items():
                target = os.path.join(folder, "assets.extra", relative)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copyfile(source, target)

        atomic.publish_folder(export_dir, build)
        logging.info("SavedModel written to: %s", export_dir)
        return export_dir.encode()

    export_savedmodel = export_saved_model


def _extract_keys(predictions: Any, predict_keys: Sequence[str] | None) -> Any:
    """The predictions named in `predict_keys` that exist, as TF 2.15; an error if none does."""
    if not predict_keys:
        return predictions
    if not isinstance(predictions, dict):
        raise ValueError("predict_keys argument is not valid in case of non-dict predictions.")
    kept = {key: value for key, value in predictions.items() if key in predict_keys}
    if not kept:
        raise ValueError(f"Expected to run at least one output from {sorted(predictions)}, provided {predict_keys}.")
    return kept


def _batch_length(values: dict) -> int:
    lengths = {key: value.shape[0] for key, value in values.items() if np.ndim(value) > 0}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"Batch length of predictions should be same. {lengths}")
    return next(iter(lengths.values())) if lengths else 1
