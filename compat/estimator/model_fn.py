"""What a model_fn is called with and returns: the modes, as tf.estimator.ModeKeys."""


class ModeKeys:
    """The modes an `input_fn` may be called in, as tf.estimator.ModeKeys."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"
