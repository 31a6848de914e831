"""Loads a portable core (`.keras`) on the backend KERAS_BACKEND names and prints its predictions as JSON.

    KERAS_BACKEND=jax python predict_core.py CORE.keras FEATURES.npz OUTPUT_KEY
"""

import json
import sys

import keras
import numpy as np

core_path, features_path, key = sys.argv[1:4]
core = keras.saving.load_model(core_path)
features = dict(np.load(features_path))
outputs = core.predict(features, verbose=0)
print(json.dumps({"backend": keras.backend.backend(), key: np.asarray(outputs[key]).tolist()}))
