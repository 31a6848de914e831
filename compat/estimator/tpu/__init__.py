"""tf.estimator.tpu (tf.compat.v1.estimator.tpu): TPUEstimator and its configuration, off a TPU.

A TPU program runs here with `TPUEstimator(use_tpu=False, ...)` on the CPU or
GPU, as TPU teams ran it for tests and debugging in TF 2.15; see
tpu_estimator.py. TPU embeddings (`experimental.EmbeddingConfigSpec`) have no
meaning off a TPU and are refused with what to use instead.
"""

import types

from compat.estimator.tpu.tpu_config import InputPipelineConfig, RunConfig, TPUConfig
from compat.estimator.tpu.tpu_estimator import TPUEstimator, TPUEstimatorSpec


class EmbeddingConfigSpec:
    """TPU embedding tables (tf.estimator.tpu.experimental.EmbeddingConfigSpec): refused off a TPU."""

    def __init__(self, *args, **kwargs):
        raise ValueError(
            "EmbeddingConfigSpec configures TPU embeddings, which have no meaning off a TPU: use "
            "tf.feature_column.embedding_column (or a Keras Embedding layer) with TPUEstimator("
            "use_tpu=False) instead"
        )


experimental = types.SimpleNamespace(EmbeddingConfigSpec=EmbeddingConfigSpec)

__all__ = ["InputPipelineConfig", "RunConfig", "TPUConfig", "TPUEstimator", "TPUEstimatorSpec", "experimental"]
