"""What a canned Estimator was built from: the settings its native Keras twin is made of.

Each canned class keeps one (`Estimator.keras_recipe`); the conversion to Keras
(`compat/estimator/keras_canned.py`) reads it. This module holds the settings only: a canned class
imports neither Keras nor the conversion.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from compat.estimator.canned import CANNED

# The canned modules whose classifiers and regressors convert to native Keras layers (keras_canned.py builds
# each network); the check (check.py) says which of a program's Estimators convert from this.
NETWORKS = ("baseline", "dnn", "dnn_linear_combined", "linear")


def native_classes() -> list[str]:
    """tf.estimator's canned classes that `to_keras` makes native Keras models of (their tf.compat.v1 twins too):
    the classifiers and regressors of `NETWORKS`' modules; an *Estimator class takes any head, which has none."""
    return [name for module in NETWORKS for name in CANNED[module] if not name.endswith("Estimator")]


# The canned classes' constructor arguments (TF 2.15's names) and the recipe field each fills.
_FIELDS = {
    "n_classes": "n_classes",
    "label_dimension": "label_dimension",
    "label_vocabulary": "label_vocabulary",
    "hidden_units": "hidden_units",
    "dnn_hidden_units": "hidden_units",
    "activation_fn": "activation_fn",
    "dnn_activation_fn": "activation_fn",
    "dropout": "dropout",
    "dnn_dropout": "dropout",
    "batch_norm": "batch_norm",
    "dnn_feature_columns": "dnn_columns",
    "linear_feature_columns": "linear_columns",
    "sparse_combiner": "sparse_combiner",
    "linear_sparse_combiner": "sparse_combiner",
}
_SEQUENCES = ("dnn_columns", "linear_columns", "hidden_units", "label_vocabulary")


@dataclasses.dataclass(frozen=True)
class CannedRecipe:
    """What a canned Estimator was built from, for its native Keras twin.

    Attributes:
      kind: the Estimator's class name (the Keras model's name, and messages).
      n_classes: a classifier's number of classes; None for a regressor.
      label_dimension: a regressor's number of outputs.
      label_vocabulary: a classifier's class names (the export's `classes`), None for '0', '1', ...
      dnn_columns, hidden_units, activation_fn, dropout, batch_norm: the DNN part, if any.
      linear_columns, sparse_combiner: the linear part, if any.
      baseline: a Baseline class's bias-only model.
    """

    kind: str
    n_classes: int | None = None
    label_dimension: int = 1
    label_vocabulary: tuple[str, ...] | None = None
    dnn_columns: tuple = ()
    hidden_units: tuple[int, ...] = ()
    activation_fn: Callable | None = None
    dropout: float | None = None
    batch_norm: bool = False
    linear_columns: tuple = ()
    sparse_combiner: str = "sum"
    baseline: bool = False

    @classmethod
    def from_arguments(cls, kind: str, arguments: dict[str, Any], network: str) -> CannedRecipe | None:
        """A recipe from a canned class's constructor arguments by TF 2.15's names (its `locals()`): the
        same names mean the same in every class.

        Args:
          kind: the class's name (the Keras model's name, and messages).
          arguments: the constructor's arguments by name, with the `head` it built if it built one.
          network: "dnn", "linear", "dnn_linear_combined" or "baseline" (the module the class lives in):
            what `feature_columns` feed, and whether the model is a Baseline's bias alone.

        Returns:
          The recipe, or None when its native model would not predict what `head` predicts: a head with a
          link of its own (its `native_keras_output` is None), or one whose output the arguments do not
          describe (a softmax head without its `n_classes`). The class then converts through its export.
        """
        if network not in NETWORKS:
            raise ValueError(f"network must be one of {NETWORKS}, not {network!r}")
        settings: dict[str, Any] = {"baseline": network == "baseline"}
        for argument, value in arguments.items():
            field = _FIELDS.get(argument)
            if argument == "feature_columns":
                field = f"{network}_columns"
            if field is None or value is None:
                continue
            if field in _SEQUENCES and not isinstance(value, Iterable):
                return None  # `hidden_units=4`: refused in training, as TF 2.15 refused it (no native twin)
            settings[field] = tuple(value) if field in _SEQUENCES else value
        recipe = cls(kind, **settings)
        head = arguments.get("head")
        if head is not None and (head.native_keras_output, head.logits_dimension) != recipe.output:
            return None
        return recipe

    @property
    def output(self) -> tuple[str, int]:
        """The native model's output: its activation and width (a head's `native_keras_output` and
        `logits_dimension` when the two agree)."""
        if self.n_classes is None:
            return "identity", self.label_dimension
        return ("sigmoid", 1) if self.n_classes == 2 else ("softmax", self.n_classes)

    @property
    def units(self) -> int:
        """The logits' width: one for two classes (a sigmoid head), the classes or label dimension else."""
        return self.output[1]
