"""The optimizers of the canned estimators, in a graph, as TF 2.15 ran them.

TF 2.15's canned estimators trained with Keras 2's (now "legacy") optimizers
in graph mode: hyperparameters are variables `training/<Name>/learning_rate`,
..., slots `training/<Name>/<variable>/<slot>`, and the optimizer counts its
steps with the global step. Keras 3 has no such optimizers, so they are
rebuilt here on TensorFlow's own update kernels (`tf.raw_ops.ResourceApply*`),
with the same variable names, initial values and update rules: model folders
written by TF 2.15 restore, slots included, and train on exactly.

`optimizer_for(spec, default_learning_rate)` accepts what TF 2.15 accepted: a
name ('Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD'), a callable returning an
optimizer, or an optimizer object (ours, or a Keras one of those classes).
The estimators call it when they are constructed, eagerly: a Keras optimizer's
settings cannot be read inside the graph a model_fn builds.
"""

from __future__ import annotations

from typing import Any, Sequence

import tensorflow as tf

_v1 = tf.compat.v1


class GraphOptimizer:
    """A Keras 2 optimizer as a graph op factory: `minimize(loss, variables, global_step)` -> train_op."""

    name = "Optimizer"
    _defaults: dict = {}
    _slot_initial: dict = {}

    def __init__(self, learning_rate: float | None = None, **hyper: Any):
        unknown = set(hyper) - set(self._defaults) - {"decay"}
        if unknown:
            raise TypeError(f"{type(self).__name__} got unknown arguments {sorted(unknown)}")
        self.hyper = {"decay": 0.0, **self._defaults, **hyper}
        default_learning_rate = self.hyper.pop("learning_rate")
        self.learning_rate = default_learning_rate if learning_rate is None else learning_rate
        self.own_iterations = False  # True: counts its steps in training/<Name>/iter, not the global step

    def _scope(self) -> str:
        return f"training/{self.name}"

    def _hyper_variable(self, key: str, value: float) -> tf.Variable:
        return _v1.get_variable(key, initializer=tf.constant(float(value), tf.float32), trainable=False,
                                use_resource=True)

    def _slot(self, variable: tf.Variable, slot: str) -> tf.Variable:
        initial = self._slot_initial[slot]
        return _v1.get_variable(f"{variable.op.name}/{slot}", shape=variable.shape, dtype=variable.dtype.base_dtype,
                                initializer=_v1.constant_initializer(initial), trainable=False, use_resource=True)

    def _hyper_names(self) -> Sequence[str]:
        return ("decay", "learning_rate")

    def minimize(self, loss: tf.Tensor, variables: Sequence[tf.Variable], global_step: tf.Variable) -> tf.Operation:
        gradients = tf.gradients(loss, list(variables))
        pairs = [(g, v) for g, v in zip(gradients, variables) if g is not None]
        with _v1.variable_scope(self._scope(), reuse=_v1.AUTO_REUSE):
            hyper = {key: self._hyper_variable(key, self.learning_rate if key == "learning_rate" else self.hyper[key])
                     for key in self._hyper_names()}
            if self.own_iterations:
                iterations = _v1.get_variable("iter", initializer=tf.constant(0, tf.int64), trainable=False,
                                              use_resource=True)
            else:
                iterations = global_step
            slots = [{slot: self._slot(v, slot) for slot in self._slot_initial} for _, v in pairs]
        step = tf.cast(iterations, tf.float32)
        learning_rate = hyper["learning_rate"] / (1.0 + hyper["decay"] * step)
        updates = [self._apply(tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g, v, s, learning_rate,
                               hyper, step) for (g, v), s in zip(pairs, slots)]
        if self.own_iterations:
            with tf.control_dependencies(updates):
                return iterations.assign_add(1).op
        return tf.group(*updates)

    def _apply(self, grad, var, slots, learning_rate, hyper, step) -> tf.Operation:
        raise NotImplementedError


class Adagrad(GraphOptimizer):
    name = "Adagrad"
    _defaults = {"learning_rate": 0.001, "initial_accumulator_value": 0.1, "epsilon": 1e-7}

    @property
    def _slot_initial(self):
        return {"accumulator": self.hyper["initial_accumulator_value"]}

    def _apply(self, grad, var, slots, learning_rate, hyper, step):
        return tf.raw_ops.ResourceApplyAdagradV2(var=var.handle, accum=slots["accumulator"].handle, lr=learning_rate,
                                                 epsilon=tf.constant(self.hyper["epsilon"], tf.float32), grad=grad)


class Ftrl(GraphOptimizer):
    name = "Ftrl"
    _defaults = {"learning_rate": 0.001, "learning_rate_power": -0.5, "initial_accumulator_value": 0.1,
                 "l1_regularization_strength": 0.0, "l2_regularization_strength": 0.0,
                 "l2_shrinkage_regularization_strength": 0.0, "beta": 0.0}

    @property
    def _slot_initial(self):
        return {"accumulator": self.hyper["initial_accumulator_value"], "linear": 0.0}

    def _hyper_names(self):
        return ("beta", "decay", "l1_regularization_strength", "l2_regularization_strength", "learning_rate",
                "learning_rate_power")

    def _apply(self, grad, var, slots, learning_rate, hyper, step):
        l2 = hyper["l2_regularization_strength"] + hyper["beta"] / (2.0 * learning_rate)
        common = dict(var=var.handle, accum=slots["accumulator"].handle, linear=slots["linear"].handle, grad=grad,
                      lr=learning_rate, l1=hyper["l1_regularization_strength"], l2=l2,
                      lr_power=hyper["learning_rate_power"])
        shrinkage = self.hyper["l2_shrinkage_regularization_strength"]
        if shrinkage:
            return tf.raw_ops.ResourceApplyFtrlV2(l2_shrinkage=tf.constant(shrinkage, tf.float32), **common)
        return tf.raw_ops.ResourceApplyFtrl(**common)


class Adam(GraphOptimizer):
    name = "Adam"
    _defaults = {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}
    _slot_initial = {"m": 0.0, "v": 0.0}

    def _hyper_names(self):
        return ("beta_1", "beta_2", "decay", "learning_rate")

    def _apply(self, grad, var, slots, learning_rate, hyper, step):
        local_step = step + 1.0
        return tf.raw_ops.ResourceApplyAdam(
            var=var.handle, m=slots["m"].handle, v=slots["v"].handle,
            beta1_power=tf.pow(hyper["beta_1"], local_step), beta2_power=tf.pow(hyper["beta_2"], local_step),
            lr=learning_rate, beta1=hyper["beta_1"], beta2=hyper["beta_2"],
            epsilon=tf.constant(self.hyper["epsilon"], tf.float32), grad=grad)


class SGD(GraphOptimizer):
    name = "SGD"
    _defaults = {"learning_rate": 0.01, "momentum": 0.0, "nesterov": False}

    @property
    def _slot_initial(self):
        return {"momentum": 0.0} if self.hyper["momentum"] else {}

    def _hyper_names(self):
        return ("decay", "learning_rate", "momentum")

    def _apply(self, grad, var, slots, learning_rate, hyper, step):
        if not self.hyper["momentum"]:
            return tf.raw_ops.ResourceApplyGradientDescent(var=var.handle, alpha=learning_rate, delta=grad)
        return tf.raw_ops.ResourceApplyKerasMomentum(var=var.handle, accum=slots["momentum"].handle,
                                                     lr=learning_rate, grad=grad, momentum=hyper["momentum"],
                                                     use_nesterov=self.hyper["nesterov"])


class RMSprop(GraphOptimizer):
    name = "RMSprop"
    _defaults = {"learning_rate": 0.001, "rho": 0.9, "momentum": 0.0, "epsilon": 1e-7}

    @property
    def _slot_initial(self):
        return {"rms": 0.0, **({"momentum": 0.0} if self.hyper["momentum"] else {})}

    def _hyper_names(self):
        return ("decay", "learning_rate", "momentum", "rho")

    def _apply(self, grad, var, slots, learning_rate, hyper, step):
        epsilon = tf.constant(self.hyper["epsilon"], tf.float32)
        if self.hyper["momentum"]:
            return tf.raw_ops.ResourceApplyRMSProp(var=var.handle, ms=slots["rms"].handle,
                                                   mom=slots["momentum"].handle, lr=learning_rate,
                                                   rho=hyper["rho"], momentum=hyper["momentum"], epsilon=epsilon,
                                                   grad=grad)
        rms = slots["rms"]
        rms_t = rms.assign(hyper["rho"] * rms + (1.0 - hyper["rho"]) * tf.square(grad))
        return var.assign_sub(learning_rate * grad / (tf.sqrt(rms_t) + epsilon)).op


_BY_NAME = {"adagrad": Adagrad, "adam": Adam, "ftrl": Ftrl, "rmsprop": RMSprop, "sgd": SGD}


def _from_keras(optimizer: Any) -> GraphOptimizer | None:
    """A Keras optimizer of one of the known classes, as ours (same hyperparameters)."""
    cls = _BY_NAME.get(type(optimizer).__name__.lower())
    if cls is None or not hasattr(optimizer, "get_config"):
        return None
    config = optimizer.get_config()
    learning_rate = config.get("learning_rate")
    if not isinstance(learning_rate, (int, float)):
        raise ValueError(f"{type(optimizer).__name__} with a learning-rate schedule is not supported by the canned "
                         "estimators; give a float learning_rate")
    hyper = {key: config[key] for key in cls._defaults if key in config and key != "learning_rate"}
    return cls(float(learning_rate), **hyper)


def optimizer_for(spec: Any, default_learning_rate: float | None = None) -> GraphOptimizer:
    """The optimizer a canned estimator trains with, from what its `optimizer` argument was given."""
    if isinstance(spec, str):
        cls = _BY_NAME.get(spec.lower())
        if cls is None:
            raise ValueError(f"Unsupported optimizer name: {spec}. Supported names are: "
                             f"{['Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD']}")
        return cls(default_learning_rate)
    if isinstance(spec, GraphOptimizer):
        return spec
    if isinstance(spec, tf.compat.v1.train.Optimizer):
        raise ValueError(f"The given object is not a tf.keras.optimizers.Optimizer instance. Given: {spec}. "
                         "TF 2.15's canned estimators refused tf.compat.v1.train optimizers too; pass a name "
                         "('Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD') or a Keras optimizer")
    if callable(spec) and not hasattr(spec, "get_config"):
        return optimizer_for(spec(), default_learning_rate)
    converted = _from_keras(spec)
    if converted is None:
        raise ValueError(f"Unsupported optimizer {spec!r}: give a name ('Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD'), "
                         "or a Keras optimizer of one of those classes")
    return converted


def train_op_for(optimizers: Sequence[tuple[GraphOptimizer, Sequence[tf.Variable]]], loss: tf.Tensor,
                 global_step: tf.Variable) -> tf.Operation:
    """Each optimizer over its variables, then the global step, which counts one training step."""
    updates = [optimizer.minimize(loss, variables, global_step) for optimizer, variables in optimizers if variables]
    with tf.control_dependencies(updates):
        return global_step.assign_add(1).op


__all__ = ["Adagrad", "Adam", "Ftrl", "GraphOptimizer", "RMSprop", "SGD", "optimizer_for", "train_op_for"]
