"""tf.estimator.export: serving input receivers and export outputs, with TF 2.15's names.

  ServingInputReceiver, TensorServingInputReceiver    what a signature is fed, and the features it gives
  build_parsing_serving_input_receiver_fn             serialized tf.Examples under `examples`
  build_raw_serving_input_receiver_fn                 placeholders shaped as the features
  ClassificationOutput, RegressionOutput, PredictOutput, EvalOutput, ExportOutput   what signatures return

A classification or regression signature needs one string input (serialized
tf.Examples); with other receivers it is left out of an export, as TF 2.15 left it out.
"""

from compat.estimator.export.export import (
    ServingInputReceiver,
    TensorServingInputReceiver,
    build_parsing_serving_input_receiver_fn,
    build_raw_serving_input_receiver_fn,
)
from compat.estimator.export.export_output import (
    ClassificationOutput,
    EvalOutput,
    ExportOutput,
    PredictOutput,
    RegressionOutput,
)

__all__ = [
    "ClassificationOutput",
    "EvalOutput",
    "ExportOutput",
    "PredictOutput",
    "RegressionOutput",
    "ServingInputReceiver",
    "TensorServingInputReceiver",
    "build_parsing_serving_input_receiver_fn",
    "build_raw_serving_input_receiver_fn",
]
