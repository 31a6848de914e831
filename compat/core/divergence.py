"""The one policy for a loss that becomes NaN or infinite, in every mode and engine.

Training stops at the first non-finite loss it sees, saves nothing more, and
raises `TrainingDiverged` naming the step and the last good checkpoint, from
which the same command would resume. `--mode=tune` records such a trial as
failed and goes on.
"""

from __future__ import annotations

import math

from compat.core.errors import UserError


class TrainingDiverged(UserError, FloatingPointError):
    """The loss became NaN or infinite; the message names the step and the last good checkpoint."""

    exit_code = 1  # the run stopped on the way

    def __init__(self, step: int, loss: float, last_checkpoint: str | None):
        self.step, self.loss, self.last_checkpoint = step, loss, last_checkpoint
        super().__init__(
            f"the loss became NaN or infinite ({loss}) at step {step}; the last good checkpoint is "
            f"{last_checkpoint or 'none (none was saved yet)'}. Lower `learning_rate` or check the data"
        )


def is_finite(loss: float) -> bool:
    return math.isfinite(float(loss))
