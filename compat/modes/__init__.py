"""The application's training modes and what they share: `run` (a run's setup, folder and metrics),
`keras_mode`, `estimator_mode`, `tuning` and `predict`, with the exports, callbacks, charts, strategy
choice and model-folder layout they use. `train.py` is their command line."""
