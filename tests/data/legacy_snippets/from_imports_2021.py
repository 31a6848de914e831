# 2021: names imported from their modules, renamed; a Keras model converted
from tensorflow import estimator as est
from tensorflow import feature_column as fc
from tensorflow.estimator import DNNClassifier as DNN
from tensorflow.keras.estimator import model_to_estimator

COLUMNS = [fc.numeric_column("x", shape=(3,))]


def canned(model_dir):
    return DNN(hidden_units=[8], feature_columns=COLUMNS, model_dir=model_dir,
               config=est.RunConfig(save_checkpoints_steps=10))


def converted(keras_model):
    return model_to_estimator(keras_model=keras_model)
