"""The Keras callbacks every mode's `fit` shares: the exact step budget, the divergence policy, the clock."""

from __future__ import annotations

import time

import keras

from compat.core.divergence import TrainingDiverged, is_finite


class StopAtMaxSteps(keras.callbacks.Callback):
    """Ends `fit` at `max_steps` exactly: the last period is cut short, then validated and saved."""

    def __init__(self, max_steps: int) -> None:
        super().__init__()
        self.max_steps = max_steps

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) >= self.max_steps:
            self.model.stop_training = True


class NanGuard(keras.callbacks.Callback):
    """The divergence policy for `model.fit`: stops at the end of the first period whose loss is
    not finite, before anything of it is saved (put it before the checkpoint callback).

    Checking once per period keeps `fit` free of a host sync at every step; a NaN
    anywhere in the period makes the period's mean loss NaN.
    """

    def __init__(self) -> None:
        super().__init__()
        self.error: TrainingDiverged | None = None
        self.last_checkpoint: str | None = None

    def on_epoch_end(self, epoch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not is_finite(loss):
            step = int(self.model.optimizer.iterations.numpy())
            self.error = TrainingDiverged(step, float(loss), self.last_checkpoint)
            self.model.stop_training = True

    def raise_if_diverged(self) -> None:
        if self.error is not None:
            raise self.error


class TrainingClock(keras.callbacks.Callback):
    """Training time and steps per period, without validation; adds examples/s and the learning
    rate to each period's logs (TensorBoard writes them). `period_ends` holds, for each period,
    the wall seconds from the first period's start to this one's end, validation included."""

    def __init__(self, batch_size: int) -> None:
        super().__init__()
        self.batch_size = batch_size
        self.train_seconds = 0.0
        self.trained_steps = 0
        self.period_ends: list[float] = []
        self._began: float | None = None

    @property
    def examples_per_second(self) -> float:
        return self.trained_steps * self.batch_size / max(self.train_seconds, 1e-9)

    def _step(self) -> int:
        return int(self.model.optimizer.iterations.numpy())

    def on_epoch_begin(self, epoch, logs=None):
        self._start, self._first_step, self._stopped = time.perf_counter(), self._step(), None
        self._began = self._began or self._start

    def on_test_begin(self, logs=None):  # validation runs after the period's training steps
        if self._stopped is None:
            self._stopped = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        seconds = (self._stopped or time.perf_counter()) - self._start
        self.train_seconds += seconds
        self.trained_steps += self._step() - self._first_step
        self.period_ends.append(time.perf_counter() - self._began)
        if logs is not None:
            logs["examples_per_second"] = (self._step() - self._first_step) * self.batch_size / max(seconds, 1e-9)
            logs["learning_rate"] = float(self.model.optimizer.learning_rate)
