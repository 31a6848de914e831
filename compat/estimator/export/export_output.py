"""Export outputs: what each signature of an exported SavedModel returns (tf.estimator.export.*Output).

They are TensorFlow's own classes, which TF 2.15's Estimator used and which
TensorFlow still ships: `ClassificationOutput` (tensorflow/serving/classify,
for serialized tf.Examples), `RegressionOutput` (tensorflow/serving/regress),
`PredictOutput` (tensorflow/serving/predict, any receiver), and the
`TrainOutput`/`EvalOutput` of `experimental_export_all_saved_models`.
"""

from compat.core.tf_internals import export_output

ExportOutput = export_output.ExportOutput
ClassificationOutput = export_output.ClassificationOutput
RegressionOutput = export_output.RegressionOutput
PredictOutput = export_output.PredictOutput
TrainOutput = export_output.TrainOutput
EvalOutput = export_output.EvalOutput

__all__ = ["ClassificationOutput", "EvalOutput", "ExportOutput", "PredictOutput", "RegressionOutput", "TrainOutput"]
