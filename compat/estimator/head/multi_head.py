"""MultiHead: several named heads trained together (tf.estimator.MultiHead).

Logits and labels are dicts keyed by head name (logits may also be one Tensor,
split along its last dimension in the heads' order). The loss is the
(optionally weighted) sum of the heads' losses; metrics and predictions are
the heads' own, metrics keyed `<key>/<head name>` and predictions
`(head name, key)`; the first head is served by default.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf
import tf_keras

from compat.estimator.canned.metric_keys import MetricKeys
from compat.estimator.export.export_output import PredictOutput
from compat.estimator.head import base_head
from compat.estimator.model_fn import EstimatorSpec, ModeKeys


def _no_op_train_op(loss: tf.Tensor) -> tf.Operation:
    """The sub-heads' train op: MultiHead trains once, on the merged loss."""
    del loss
    return tf.no_op()


def _default_export_output(export_outputs: dict, head_name: str) -> Any:
    """A head's default signature: its only one, else the one under serving_default."""
    if len(export_outputs) == 1:
        return next(iter(export_outputs.values()))
    if base_head.DEFAULT_SERVING_KEY not in export_outputs:
        raise ValueError(
            f"{head_name} did not specify default export_outputs. Given: {export_outputs} Suggested fix: "
            f"Use one of the heads in tf.estimator, or include key {base_head.DEFAULT_SERVING_KEY} in "
            "export_outputs."
        )
    return export_outputs[base_head.DEFAULT_SERVING_KEY]


class MultiHead(base_head.Head):
    """A head made of named heads, for multi-objective learning.

    TRAIN: the heads' losses, each times its weight, summed, and one train op
    on that. EVAL: each head's metrics, plus `loss/<head name>` (each head's
    training loss). PREDICT: predictions keyed `(head name, key)`; signatures
    `serving_default` (the first head's default), `<head name>` and
    `<head name>/<signature>` for each head's, and `predict` with every head's
    predictions as `<head name>/<key>`.

    Args:
      heads: the heads, each with a `name`; the first is served by default.
      head_weights: one float per head, multiplying its loss (default: 1 each).
    """

    def __init__(self, heads: Sequence[base_head.Head], head_weights: Sequence[float] | None = None):
        if not heads:
            raise ValueError(f"Must specify heads. Given: {heads}")
        if head_weights and len(head_weights) != len(heads):
            raise ValueError(
                f"heads and head_weights must have the same size. Given len(heads): {len(heads)}. "
                f"Given len(head_weights): {len(head_weights)}."
            )
        names = []
        for head in heads:
            if head.name is None:
                raise ValueError(f"All given heads must have name specified. Given: {head}")
            names.append(head.name)
        self._heads = tuple(heads)
        self._names: tuple[str, ...] = tuple(names)
        self._head_weights = tuple(head_weights) if head_weights else ()
        self._logits_dimension = sum(head.logits_dimension for head in heads)

    @property
    def name(self) -> str:
        """The heads' names joined by `_`."""
        return "_".join(self._names)

    @property
    def logits_dimension(self) -> Any:
        """The sum of the heads' logits dimensions (the size of logits given as one Tensor)."""
        return self._logits_dimension

    @property
    def loss_reduction(self) -> str:
        """The heads' common loss reduction (they must agree)."""
        reductions = [head.loss_reduction for head in self._heads]
        if len(set(reductions)) > 1:
            raise ValueError(f"The loss_reduction must be the same for different heads. Given: {reductions}")
        return reductions[0]

    def _loss_key(self, head: base_head.Head) -> str:
        return f"{MetricKeys.LOSS}/{head.name}"

    def _split_logits(self, logits: Any) -> dict:
        """One logits Tensor `[D0, ... DN, sum of dimensions]` as the heads' logits, in their order."""
        with tf.name_scope("split_logits"):
            logits = tf.convert_to_tensor(logits)
            dimensions = [head.logits_dimension for head in self._heads]
            shape = logits.shape.as_list() if logits.shape.rank is not None else [None]
            if shape[-1] is not None and shape[-1] != sum(dimensions):
                raise ValueError(
                    f"Could not split logits of shape {shape!r} among the heads with individual logits "
                    f"dimensions: {dimensions!r}. The last dimension of the logits tensor should equal "
                    f"{sum(dimensions)} but is {shape[-1]}."
                )
            pieces = tf.split(logits, dimensions, axis=-1)
            return {head.name: piece for head, piece in zip(self._heads, pieces)}

    def _logits_dict(self, logits: Any, labels: Any = None) -> dict:
        """The logits by head name; logits and labels (when given) checked to have every head's."""
        names = self._names
        if isinstance(logits, dict):
            missing = sorted(set(names) - set(logits))
            if missing:
                raise ValueError(f"logits has missing values for head(s): {missing}")
            logits_dict = logits
        else:
            logits_dict = self._split_logits(logits)
        if labels is not None:
            if not isinstance(labels, dict):
                raise ValueError(f"labels must be a dict. Given: {labels}")
            missing = sorted(set(names) - set(labels))
            if missing:
                raise ValueError(f"labels has missing values for head(s): {missing}")
        return logits_dict

    def loss(
        self,
        labels: dict,
        logits: Any,
        features: Any = None,
        mode: str | None = None,
        regularization_losses: Sequence[Any] | None = None,
    ) -> tf.Tensor:
        """The sum of the heads' training losses, each times its head weight, plus the regularization losses."""
        logits_dict = self._logits_dict(logits, labels)
        losses = [
            head.loss(labels[head.name], logits_dict[head.name], features=features, mode=mode) for head in self._heads
        ]
        with tf.name_scope("merge_losses"):
            if self._head_weights:
                losses = [tf.math.multiply(loss, weight) for loss, weight in zip(losses, self._head_weights)]
            return base_head.add_regularization(tf.math.add_n(losses), regularization_losses)

    def predictions(self, logits: Any, keys: Sequence[str] | None = None) -> dict:
        """Every head's predictions, keyed `(head name, prediction key)`; `keys` is not used."""
        del keys  # each head's predictions are all of its keys, as in TF 2.15
        logits_dict = self._logits_dict(logits)
        predictions = {}
        with tf.name_scope("merge_pred"):
            for head in self._heads:
                for key, value in head.predictions(logits_dict[head.name]).items():
                    predictions[(head.name, key)] = value
        return predictions

    def metrics(self, regularization_losses: Sequence[Any] | None = None) -> dict:
        """`loss/<head name>` for each head, and `regularization_loss/<name>` when there are regularization
        losses; `update_metrics` adds the heads' own."""
        eval_metrics = {}
        if regularization_losses is not None:
            key = base_head.suffixed(MetricKeys.LOSS_REGULARIZATION, self.name)
            eval_metrics[key] = tf_keras.metrics.Mean(name=MetricKeys.LOSS_REGULARIZATION)
        with tf.name_scope("merge_eval"):
            for head in self._heads:
                eval_metrics[self._loss_key(head)] = tf_keras.metrics.Mean(name=self._loss_key(head))
        return eval_metrics

    def update_metrics(
        self,
        eval_metrics: dict,
        features: Any,
        logits: Any,
        labels: dict,
        regularization_losses: Sequence[Any] | None = None,
    ) -> dict:
        """Updates `eval_metrics` and adds each head's metrics, updated with its logits and labels."""
        logits_dict = self._logits_dict(logits, labels)
        base_head.update_regularization_metric(
            eval_metrics, base_head.suffixed(MetricKeys.LOSS_REGULARIZATION, self.name), regularization_losses
        )
        for head in self._heads:
            head_logits, head_labels = logits_dict[head.name], labels[head.name]
            eval_metrics[self._loss_key(head)].update_state(
                values=head.loss(head_labels, head_logits, features=features)
            )
            updated = head.update_metrics(head.metrics(), features, head_logits, head_labels)
            eval_metrics.update(updated or {})
        return eval_metrics

    def create_estimator_spec(
        self,
        features: Any,
        mode: str,
        logits: Any,
        labels: dict | None = None,
        optimizer: Any = None,
        trainable_variables: Sequence[tf.Variable] | None = None,
        train_op_fn: Callable[[tf.Tensor], Any] | None = None,
        update_ops: Sequence[Any] | None = None,
        regularization_losses: Sequence[Any] | None = None,
    ) -> EstimatorSpec:
        """The EstimatorSpec for `mode`, from the heads' specs; `regularization_losses` regularize the merged loss.

        TRAIN takes `optimizer` or `train_op_fn` (exactly one), as the single heads do.
        """
        with tf.compat.v1.name_scope(self.name, "multi_head"):
            logits_dict = self._logits_dict(logits, labels)
            head_specs = [
                head.create_estimator_spec(
                    features=features,
                    mode=mode,
                    logits=logits_dict[head.name],
                    labels=labels[head.name] if labels else None,
                    train_op_fn=_no_op_train_op,
                )
                for head in self._heads
            ]
            predictions = self.predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(
                    mode=ModeKeys.PREDICT,
                    predictions=predictions,
                    export_outputs=self._merged_export_outputs(head_specs),
                )
            assert labels is not None  # each head's spec above refused TRAIN and EVAL without labels
            loss = self.loss(labels, logits, features, mode, regularization_losses)
            if mode == ModeKeys.EVAL:
                eval_metrics = self.update_metrics(
                    self.metrics(regularization_losses=regularization_losses),
                    features,
                    logits,
                    labels,
                    regularization_losses=regularization_losses,
                )
                return EstimatorSpec(
                    mode=ModeKeys.EVAL, predictions=predictions, loss=loss, eval_metric_ops=eval_metrics
                )
            if mode == ModeKeys.TRAIN:
                train_op = base_head.train_op_for(
                    loss,
                    optimizer=optimizer,
                    trainable_variables=trainable_variables,
                    train_op_fn=train_op_fn,
                    update_ops=update_ops,
                    loss_reduction=self.loss_reduction,
                )
                base_head.add_loss_summaries(loss, regularization_losses)
                return EstimatorSpec(mode=ModeKeys.TRAIN, loss=loss, train_op=train_op, predictions=predictions)
            raise ValueError(f"mode={mode} unrecognized")

    def _merged_export_outputs(self, head_specs: Sequence[EstimatorSpec]) -> dict:
        """serving_default (the first head's default), each head's signatures under `<name>` (its default) and
        `<name>/<signature>`, and `predict` with the heads' PredictOutputs merged as `<name>/<key>`."""
        export_outputs = {
            base_head.DEFAULT_SERVING_KEY: _default_export_output(head_specs[0].export_outputs, self._names[0])
        }
        merged_predictions = {}
        for head, spec in zip(self._heads, head_specs):
            for signature, output in spec.export_outputs.items():
                key = head.name if signature == base_head.DEFAULT_SERVING_KEY else f"{head.name}/{signature}"
                export_outputs[key] = output
                if signature == base_head.PREDICT_SERVING_KEY and isinstance(output, PredictOutput):
                    for name, tensor in output.outputs.items():
                        merged_predictions[f"{head.name}/{name}"] = tensor
        export_outputs[base_head.PREDICT_SERVING_KEY] = PredictOutput(merged_predictions)
        return export_outputs


__all__ = ["MultiHead"]
