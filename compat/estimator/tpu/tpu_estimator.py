"""TPUEstimator off a TPU: a TPU program's model_fn and input_fn, run on the CPU or GPU as TF 2.15 ran them.

With `use_tpu=False`, TF 2.15's TPUEstimator was an Estimator that
- handed the batch size of the mode to the input_fn and the model_fn as
  `params["batch_size"]` (`train_batch_size`, `eval_batch_size`,
  `predict_batch_size`: the global batch, since one device holds it), and
  required the input_fn to take `params`;
- took a `TPUEstimatorSpec` from the model_fn: `eval_metrics` is
  `(metric_fn, tensors)`, called here on the tensors to make the
  eval_metric_ops; `scaffold_fn` is called for the scaffold; `host_call`
  `(fn, tensors)` runs with every step (its summaries are written).
That is what this one does. A TPU is not there to use: `use_tpu=True` and TPU
embeddings are refused, naming what to do instead.
"""

from __future__ import annotations

import collections
import copy
import enum
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from compat.core import tf_internals
from compat.estimator.estimator import Estimator, check_hooks, verify_model_fn_args
from compat.estimator.model_fn import EstimatorSpec, ModeKeys
from compat.estimator.tpu.tpu_config import (
    InputPipelineConfig,
    RunConfig,
    check_positive_integer,
    parse_iterations_per_loop,
)

_BATCH_SIZE_KEY = "batch_size"
_USE_TPU_KEY = "use_tpu"
_RESERVED_PARAMS = (_BATCH_SIZE_KEY, "context")


class ExportSavedModelApiVersion(enum.IntEnum):
    """`TPUEstimator(export_saved_model_api_version=...)`, as TF 2.15 named its values: how a model_fn was
    exported for TPU serving (V1 rewritten by the Estimator, V2 as the model_fn builds it). Off a TPU both
    export the model_fn as it is."""

    V1 = 1
    V2 = 2


class BatchConfig(
    collections.namedtuple(
        "BatchConfig",
        ["num_batch_threads", "max_batch_size", "batch_timeout_micros", "allowed_batch_sizes", "max_enqueued_batches"],
    )
):
    """How TF 2.15 batched requests for a model served on a TPU (`model_fn_inference_on_tpu`); libraries that
    export for TPUs (AdaNet) make one. Off a TPU it configures nothing."""

    def __new__(
        cls,
        num_batch_threads: int,
        max_batch_size: int,
        batch_timeout_micros: int,
        allowed_batch_sizes: Any,
        max_enqueued_batches: int = 100,
    ):
        return super().__new__(
            cls, num_batch_threads, max_batch_size, batch_timeout_micros, allowed_batch_sizes, max_enqueued_batches
        )


def model_fn_inference_on_tpu(
    model_fn: Callable,
    features: Any,
    labels: Any = None,
    config: Any = None,
    params: Any = None,
    batch_config: Any = None,
) -> Any:
    """TF 2.15 rewrote `model_fn` to serve on a TPU: there is no TPU here.

    Raises:
      ValueError: always, naming the way to export for a CPU or GPU.
    """
    raise ValueError(
        "model_fn_inference_on_tpu serves a model on a TPU, which compat.estimator does not drive: export with "
        "TPUEstimator(export_to_tpu=False) or Estimator.export_saved_model, which serve on the CPU or GPU"
    )


def _call_with_tensors(fn: Callable, tensors: Any) -> Any:
    """`fn(*tensors)` for a list, `fn(**tensors)` for a dict: how TF 2.15 called metric_fn and host_call's fn."""
    if isinstance(tensors, dict):
        return fn(**tensors)
    return fn(*tensors)


class TPUEstimatorSpec(
    collections.namedtuple(
        "TPUEstimatorSpec",
        [
            "mode",
            "predictions",
            "loss",
            "train_op",
            "eval_metrics",
            "export_outputs",
            "scaffold_fn",
            "host_call",
            "training_hooks",
            "evaluation_hooks",
            "prediction_hooks",
        ],
    )
):
    """What a TPUEstimator model_fn returns (tf.estimator.tpu.TPUEstimatorSpec)."""

    def __new__(
        cls,
        mode: str,
        predictions: Any = None,
        loss: Any = None,
        train_op: Any = None,
        eval_metrics: tuple | None = None,
        export_outputs: dict | None = None,
        scaffold_fn: Callable | None = None,
        host_call: tuple | None = None,
        training_hooks: Any = None,
        evaluation_hooks: Any = None,
        prediction_hooks: Any = None,
    ):
        for name, pair in (("eval_metrics", eval_metrics), ("host_call", host_call)):
            if pair is not None and (not isinstance(pair, (tuple, list)) or len(pair) != 2 or not callable(pair[0])):
                raise ValueError(f"{name} should be tuple or list with two elements: (fn, tensors), given {pair}")
        hooks = [tuple(hooks or ()) for hooks in (training_hooks, evaluation_hooks, prediction_hooks)]
        for group in hooks:
            for hook in group:
                if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
                    raise TypeError(f"All hooks must be SessionRunHook instances, given: {hook}")
        return super().__new__(
            cls, mode, predictions, loss, train_op, eval_metrics, export_outputs, scaffold_fn, host_call, *hooks
        )

    def as_estimator_spec(self) -> EstimatorSpec:
        """The EstimatorSpec this spec stands for off a TPU."""
        eval_metric_ops = _call_with_tensors(*self.eval_metrics) if self.eval_metrics is not None else None
        hooks: tuple = ()
        if self.host_call is not None:
            hooks = (_HostCallHook(_call_with_tensors(*self.host_call)),)
        return EstimatorSpec(
            mode=self.mode,
            predictions=self.predictions,
            loss=self.loss,
            train_op=self.train_op,
            eval_metric_ops=eval_metric_ops,
            export_outputs=self.export_outputs,
            scaffold=self.scaffold_fn() if self.scaffold_fn else None,
            training_hooks=self.training_hooks + hooks,
            evaluation_hooks=self.evaluation_hooks + hooks,
            prediction_hooks=self.prediction_hooks + hooks,
        )


class _HostCallHook(tf.compat.v1.train.SessionRunHook):
    """Runs what a host_call's fn returned (summary ops, mostly) with every step, as a TPU's host did."""

    def __init__(self, fetches: Any) -> None:
        self._fetches = fetches

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._fetches) if self._fetches is not None else None


class _ExamplesPerSecondHook(tf.compat.v1.train.SessionRunHook):
    """`examples/sec` beside the step counter's `global_step/sec`, at the same steps (every `every_n_steps`,
    from the second time), as TF 2.15's TPUEstimator wrote it: the steps' rate times the batch size."""

    def __init__(self, batch_size: int, every_n_steps: int, output_dir: str) -> None:
        self._batch_size, self._output_dir = batch_size, output_dir
        self._timer = tf.compat.v1.train.SecondOrStepTimer(every_steps=every_n_steps)

    def begin(self) -> None:
        self._global_step = tf.compat.v1.train.get_global_step()
        self._writer = tf.compat.v1.summary.FileWriterCache.get(self._output_dir)

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values) -> None:
        if not self._timer.should_trigger_for_step(run_values.results + 1):  # the step just run, as the counter
            return
        step = run_context.session.run(self._global_step)
        elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(step)
        if elapsed_time is not None:
            rate = elapsed_steps * self._batch_size / elapsed_time
            value = tf.compat.v1.Summary.Value(tag="examples/sec", simple_value=rate)
            self._writer.add_summary(tf.compat.v1.Summary(value=[value]), step)


def _check_positive(value: Any, name: str) -> None:
    """`value`, when given, is a positive int (TF 2.15's check), else ValueError naming `name`."""
    if value is not None:
        check_positive_integer(value, name)


def _check_batch_sizes_and_inputs(
    tpu: Any,
    use_tpu: bool,
    train_batch_size: int | None,
    eval_batch_size: int | None,
    predict_batch_size: int | None,
    embedding_config_spec: Any,
) -> None:
    """TPUEstimator's argument checks, with TF 2.15's messages, made before any TPU is needed."""
    if use_tpu:
        if train_batch_size is None:
            raise ValueError("`train_batch_size` cannot be `None`")
        if tpu.per_host_input_for_training is InputPipelineConfig.PER_SHARD_V1 and tpu.num_cores_per_replica:
            raise ValueError(
                "Model parallelism only supports per host input for training. Please adjust "
                "TPURunconfig.per_host_input_for_training."
            )
        if embedding_config_spec and tpu.per_host_input_for_training not in (
            InputPipelineConfig.PER_HOST_V1,
            InputPipelineConfig.PER_HOST_V2,
        ):
            raise ValueError(
                "Only PER_HOST_V1 and PER_HOST_V2 is supported when using TPU Embedding; got "
                f"{tpu.per_host_input_for_training}."
            )
    for value, name in (
        (train_batch_size, "train_batch_size"),
        (eval_batch_size, "eval_batch_size"),
        (predict_batch_size, "predict_batch_size"),
    ):
        _check_positive(value, f"`{name}`")


class TPUEstimator(Estimator):
    """tf.estimator.tpu.TPUEstimator, run with `use_tpu=False` on this machine's CPU or GPU."""

    # It redefines train, evaluate, predict and export with TF 2.15's TPU arguments, as TF 2.15's did: the
    # Estimator's check that user subclasses keep them is not for it (read from this class only).
    _overrides_on_purpose = True

    def __init__(
        self,
        model_fn: Callable | None = None,
        model_dir: str | None = None,
        config: RunConfig | None = None,
        params: Any = None,
        use_tpu: bool = True,
        train_batch_size: int | None = None,
        eval_batch_size: int | None = None,
        predict_batch_size: int | None = None,
        batch_axis: Any = None,
        eval_on_tpu: bool = True,
        export_to_tpu: bool = True,
        export_to_cpu: bool = True,
        warm_start_from: Any = None,
        embedding_config_spec: Any = None,
        export_saved_model_api_version: Any = None,
    ):
        if config is None or not isinstance(config, RunConfig):
            raise ValueError("`config` must be provided with type `tpu_config.RunConfig`")
        if params is not None and any(key in params for key in _RESERVED_PARAMS):
            raise ValueError(f"{list(_RESERVED_PARAMS)} are reserved keys but existed in params {params}.")
        tpu = config.tpu_config
        _check_batch_sizes_and_inputs(
            tpu, use_tpu, train_batch_size, eval_batch_size, predict_batch_size, embedding_config_spec
        )
        if embedding_config_spec is not None:
            raise ValueError(
                "embedding_config_spec configures TPU embeddings, which have no meaning off a TPU: "
                "use tf.feature_column.embedding_column (or a Keras Embedding layer) instead"
            )
        if not export_to_cpu and not export_to_tpu:
            raise ValueError("One of export_to_cpu and export_to_tpu must be true.")
        if export_saved_model_api_version not in (None, 1, 2):
            raise ValueError(f"export_saved_model_api_version should be 1 or 2; got {export_saved_model_api_version}.")
        self._use_tpu = use_tpu
        self._eval_on_tpu = eval_on_tpu
        self._export_to_tpu = export_to_tpu
        self._export_to_cpu = export_to_cpu
        self._exporting = False  # while a SavedModel is built: the model_fn gets no batch size
        self._batch_sizes = {
            ModeKeys.TRAIN: train_batch_size,
            ModeKeys.EVAL: eval_batch_size,
            ModeKeys.PREDICT: predict_batch_size,
        }
        if model_fn is None:
            raise ValueError("model_fn must be provided to Estimator.")
        verify_model_fn_args(model_fn, params)  # the user's, as TF 2.15 checked it (not the wrapper below)
        self._tpu_model_fn = model_fn

        def model_fn_off_tpu(features, labels, mode, config, params):
            spec = self._call_tpu_model_fn(features, labels, mode, config, params)
            return spec.as_estimator_spec() if isinstance(spec, TPUEstimatorSpec) else spec

        super().__init__(model_fn_off_tpu, model_dir, config, params or {}, warm_start_from)
        parse_iterations_per_loop(tpu.iterations_per_loop)

    def _refuse_without_a_tpu(self) -> None:
        """Where TF 2.15 would have started the TPU: after its argument checks, so they are heard here too."""
        if self._use_tpu:
            raise ValueError(
                "TPUEstimator(use_tpu=True) needs a TPU, which compat.estimator does not drive: run the "
                "same program with use_tpu=False (CPU or GPU), as TF 2.15 ran it there"
            )

    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):  # type: ignore[override]
        """Estimator.train; with use_tpu, TF 2.15's TPU checks of the steps first."""
        if self._use_tpu:
            if steps is None and max_steps is None:
                raise ValueError("For TPU training, one of `steps` or `max_steps` must be set. Cannot be both `None`.")
            _check_positive(steps, "Train steps")
            _check_positive(max_steps, "Train max_steps")
            check_hooks(hooks)
            self._refuse_without_a_tpu()
        every, batch_size = self._config.log_step_count_steps, self._batch_sizes[ModeKeys.TRAIN]
        if every and batch_size and self._config.is_chief:
            hooks = [*(hooks or []), _ExamplesPerSecondHook(batch_size, every, self.model_dir)]
        return super().train(input_fn, hooks=hooks, steps=steps, max_steps=max_steps, saving_listeners=saving_listeners)

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):  # type: ignore[override]
        """Estimator.evaluate; with use_tpu, TF 2.15's TPU check of the steps first."""
        if self._use_tpu and self._eval_on_tpu:  # eval_on_tpu=False evaluated on the CPU in TF 2.15
            if steps is None:
                raise ValueError("Evaluate `steps` must be set on TPU. Cannot be `None`.")
            _check_positive(steps, "Eval steps")
            check_hooks(hooks)
            self._refuse_without_a_tpu()
        return super().evaluate(input_fn, steps=steps, hooks=hooks, checkpoint_path=checkpoint_path, name=name)

    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None, yield_single_examples=True):  # type: ignore[override]
        """Estimator.predict; refused with use_tpu (after the hooks' check), which needs a TPU."""
        if self._use_tpu:
            check_hooks(hooks)
            self._refuse_without_a_tpu()
        return super().predict(input_fn, predict_keys, hooks, checkpoint_path, yield_single_examples)

    def _params_for(self, mode: str, params: Any, for_model_fn: bool = False) -> Any:
        """A copy of `params` with what TF 2.15 added for `mode`: `batch_size` (where one is set for the mode)
        and, for the model_fn, `use_tpu` (False: the model runs on the CPU or GPU)."""
        items: dict[str, Any] = {}
        if self._batch_sizes.get(mode) is not None and not self._exporting:
            items[_BATCH_SIZE_KEY] = self._batch_sizes[mode]
        if for_model_fn:
            items[_USE_TPU_KEY] = False
        return _with_items(params, items)

    def _add_meta_graph_for_mode(  # type: ignore[override]
        self, builder, receiver_fn, checkpoint_path, mode, save_variables, strip_default_attrs, tags=None
    ) -> None:
        """As TF 2.15: the model_fn exported without `batch_size` in its params (the serving batch is not known),
        and for PREDICT, with `export_to_tpu` (the default), a second meta graph tagged `serve, tpu`. TF 2.15
        rewrote that one for a TPU; here it is the model_fn as on the CPU, since no TPU is driven."""
        del save_variables  # with the first meta graph written, which may be another mode's here
        graphs = [tags] if self._export_to_cpu else []  # TF 2.15 wrote no train or eval graph without it either
        if self._export_to_tpu and mode == ModeKeys.PREDICT:
            graphs.append([tf.saved_model.SERVING, tf.saved_model.TPU])
        self._exporting = True
        try:
            for graph_tags in graphs:
                first = not tf_internals.saved_model_has_variables(builder)
                super()._add_meta_graph_for_mode(
                    builder, receiver_fn, checkpoint_path, mode, first, strip_default_attrs, graph_tags
                )
        finally:
            self._exporting = False
        # TF 2.15 set `use_tpu` in the Estimator's own params when exporting, where a program reads it after
        self._params = _with_items(self._params, {_USE_TPU_KEY: False})

    def _call_tpu_model_fn(self, features, labels, mode, config, params):
        args = tf_internals.fn_args(self._tpu_model_fn)
        params = self._params_for(mode, params, for_model_fn=True)
        available = {"labels": labels, "mode": mode, "config": config, "params": params}
        return self._tpu_model_fn(
            features=features, **{name: value for name, value in available.items() if name in args}
        )

    def _call_input_fn(self, input_fn: Callable, mode: str, input_context: Any = None) -> Any:
        args = tf_internals.fn_args(input_fn)
        if "params" not in args:
            raise ValueError(
                f"input_fn ({input_fn}) does not include params argument, required by TPUEstimator to "
                'pass batch size as params["batch_size"]'
            )
        available = {
            "params": self._params_for(mode, self.params),
            "config": self.config,
            "mode": mode,
            "input_context": input_context,
        }
        with tf.device("/cpu:0"):
            return input_fn(**{name: value for name, value in available.items() if name in args})


def _with_items(params: Any, items: dict[str, Any]) -> Any:
    """A copy of `params` with `items` set, as TF 2.15's TPUEstimator set them: in a dict, or through an
    HParams-style object's `add_hparam`/`set_hparam` (the params of models written for tf.contrib's HParams)."""
    params = copy.deepcopy(params)
    for key, value in items.items():
        if hasattr(params, "set_hparam"):
            if key in params:
                params.set_hparam(key, value)
            else:
                params.add_hparam(key, value)
        else:
            params[key] = value
    return params
