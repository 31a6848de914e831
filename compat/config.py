"""The frozen configurations of a run, importable without TensorFlow.

One dataclass per concern: `PipelineConfig` (the Dataset builder),
`TrainConfig` (steps, schedule, checkpoints), `DistributionConfig` (the
strategy and cluster), `TuneConfig` (the search); `models.ModelConfig` holds
the architecture. `flags.py` defines one flag per
field, with the field's default, so a flag and its config cannot disagree; and
since nothing here imports TensorFlow, `train.py --help` answers at once.

`replace_fields` is the one mapper from named values (flags, a tuner's trial)
onto these configs.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from typing import Any

AUTOTUNE = -1  # tf.data.AUTOTUNE, without importing TensorFlow
CACHE_MODES = ("none", "memory", "disk")
FEATURES = ("waveform", "spectrogram", "log_mel", "mfcc")
_ENV_CACHE_DIR = "ESTIMATOR_COMPAT_CACHE_DIR"


def default_cache_dir() -> str:
    """`$ESTIMATOR_COMPAT_CACHE_DIR`, else `$XDG_CACHE_HOME/estimator-compat`, else `~/.cache/...`."""
    if os.environ.get(_ENV_CACHE_DIR):
        return os.environ[_ENV_CACHE_DIR]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "estimator-compat")


def _require(owner: str, ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(f"{owner}: {message}")


@dataclasses.dataclass(frozen=True)
class FeatureSpec:
    """What the deterministic (cacheable) transforms need to know, in samples."""

    sample_rate: int
    clip_samples: int
    feature: str
    frame_length: int
    frame_step: int
    fft_length: int
    n_mels: int
    n_mfcc: int
    fmin: float
    fmax: float

    @property
    def num_frames(self) -> int:
        """Frames in one clip of `clip_samples` (the model's time axis)."""
        return self.frames_in(self.clip_samples)

    @property
    def hop(self) -> int:
        """Samples between frames (1 for the waveform feature)."""
        return 1 if self.feature == "waveform" else self.frame_step

    def frames_in(self, samples: int) -> int:
        if self.feature == "waveform":
            return samples
        return 1 + (samples - self.frame_length) // self.frame_step

    @property
    def num_bins(self) -> int:
        return {
            "waveform": 1,
            "spectrogram": self.fft_length // 2 + 1,
            "log_mel": self.n_mels,
            "mfcc": self.n_mfcc,
        }[self.feature]

    @property
    def shape(self) -> tuple[int, int]:
        """`[frames, bins]` of one example: the model's input shape."""
        return (self.num_frames, self.num_bins)


@dataclasses.dataclass(frozen=True)
class PipelineConfig:
    """Every setting of the builder. Defaults are fast on 2 CPU cores and on a GPU box."""

    # Audio and features (before the cache: part of the cache key).
    sample_rate: int = 16000
    clip_seconds: float = 1.0
    feature: str = "log_mel"  # waveform | spectrogram | log_mel | mfcc
    frame_length_ms: float = 25.0
    frame_step_ms: float = 10.0
    n_mels: int = 40
    n_mfcc: int = 13
    fmin: float = 20.0
    fmax: float | None = None  # None: half the sample rate
    skip_bad_files: bool = False
    # Splits for sources without one.
    eval_fraction: float = 0.1
    test_fraction: float = 0.1
    crop_margin_ms: float = 100.0  # training clips are cached this much wider on each side
    # Augmentation (train only, after the cache).
    time_shift_ms: float = 100.0  # at most crop_margin_ms
    noise_stddev: float = 0.05  # relative to each example's standard deviation
    # Batching and performance.
    feature_key: str = "audio"
    batch_size: int = 64
    shuffle_buffer: int = 1024
    num_parallel_calls: int = AUTOTUNE
    prefetch: int = AUTOTUNE
    private_threadpool_size: int = 0  # 0: TensorFlow's shared pool
    cache: str = "disk"
    cache_dir: str | None = None  # None: default_cache_dir()
    deterministic: bool = False  # True: bit-reproducible training order, slower parallel maps (eval: always)
    prefetch_to_device: bool = True  # only acts when a GPU is visible
    # grpc://HOST:PORT of a tf.data service dispatcher: its workers read, decode and compute the
    # training split's features (python -m compat.data.service); None: this process does.
    data_service: str | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        def require(ok: bool, message: str) -> None:
            _require("PipelineConfig", ok, message)

        require(self.feature in FEATURES, f"feature '{self.feature}' must be one of {FEATURES}")
        require(self.cache in CACHE_MODES, f"cache '{self.cache}' must be one of {CACHE_MODES}")
        require(self.sample_rate > 0 and self.clip_seconds > 0, "sample_rate and clip_seconds must be > 0")
        require(self.batch_size > 0, f"batch_size must be > 0, got {self.batch_size}")
        require(self.shuffle_buffer > 0, f"shuffle_buffer must be > 0, got {self.shuffle_buffer}")
        require(
            0 < self.frame_step_ms <= self.frame_length_ms,
            f"need 0 < frame_step_ms <= frame_length_ms, got {self.frame_step_ms} and {self.frame_length_ms}",
        )
        require(
            self.frame_length_ms / 1000 <= self.clip_seconds,
            f"frame_length_ms {self.frame_length_ms} is longer than the clip ({self.clip_seconds} s)",
        )
        require(
            self.n_mels > 0 and 0 < self.n_mfcc <= self.n_mels,
            f"need 0 < n_mfcc <= n_mels, got n_mfcc {self.n_mfcc} and n_mels {self.n_mels}",
        )
        require(
            0 <= self.eval_fraction and 0 <= self.test_fraction and self.eval_fraction + self.test_fraction < 1,
            "eval_fraction and test_fraction must be >= 0 and sum to < 1",
        )
        require(
            0 <= self.time_shift_ms <= self.crop_margin_ms,
            f"time_shift_ms {self.time_shift_ms} must be between 0 and crop_margin_ms {self.crop_margin_ms}",
        )
        require(
            self.fmax is None or self.fmin < self.fmax <= self.sample_rate / 2,
            f"need fmin < fmax <= sample_rate / 2, got fmin {self.fmin}, fmax {self.fmax}",
        )
        require(0 <= self.seed < 2**31, f"seed must be between 0 and 2**31 - 1, got {self.seed}")
        require(
            self.data_service is None or re.fullmatch(r"grpc://[^:/]+:\d+", self.data_service) is not None,
            f"data_service '{self.data_service}' must be grpc://HOST:PORT, a tf.data service dispatcher",
        )
        require(
            not (self.data_service and self.skip_bad_files),
            "data_service and skip_bad_files do not go together: skipping is recorded in this process, and "
            "the service's workers decode in theirs. Clean the data first, or train without the service",
        )
        for name in ("num_parallel_calls", "prefetch"):
            value = getattr(self, name)
            require(value == AUTOTUNE or value > 0, f"{name} must be > 0 or AUTOTUNE (-1), got {value}")

    @property
    def feature_spec(self) -> FeatureSpec:
        frame_length = round(self.sample_rate * self.frame_length_ms / 1000)
        return FeatureSpec(
            sample_rate=self.sample_rate,
            clip_samples=round(self.sample_rate * self.clip_seconds),
            feature=self.feature,
            frame_length=frame_length,
            frame_step=round(self.sample_rate * self.frame_step_ms / 1000),
            fft_length=1 << (frame_length - 1).bit_length(),
            n_mels=self.n_mels,
            n_mfcc=self.n_mfcc,
            fmin=self.fmin,
            fmax=self.fmax or self.sample_rate / 2,
        )

    @property
    def resolved_cache_dir(self) -> str:
        return self.cache_dir or default_cache_dir()


DTYPES = ("float32", "mixed_float16", "mixed_bfloat16")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """How long and how a model trains, the same in every mode."""

    epochs: int = 15
    max_steps: int | None = None  # overrides epochs
    learning_rate: float = 5e-3
    eval_every_steps: int | None = None  # None: once per epoch
    # TensorBoard scalars and the progress line every N steps (the Estimator's save_summary_steps and
    # log_step_count_steps, TF 2.15's default 100).
    log_every_steps: int = 20  # a default run of 240 steps gives TensorBoard 12 points
    keep_checkpoints: int = 3
    seed: int = 0
    export: bool = True
    # Training steps per compiled call (Keras' steps_per_execution); 0: the largest divisor of the
    # evaluation period up to 64, so that periods stay exact and Python runs once per call, not per step.
    steps_per_execution: int = 0
    # GPU switches, with TensorFlow Model Garden's names: the Keras dtype policy (mixed_* compute in
    # 16 bits, keep float32 weights), XLA compilation of the step, and a profiled step range (first, last).
    dtype: str = "float32"
    enable_xla: bool = False
    profile_steps: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        def require(ok: bool, message: str) -> None:
            _require("TrainConfig", ok, message)

        require(self.dtype in DTYPES, f"dtype '{self.dtype}' must be one of {DTYPES}")
        require(
            self.profile_steps is None
            or (len(self.profile_steps) == 2 and 1 <= self.profile_steps[0] <= self.profile_steps[1]),
            f"profile_steps {self.profile_steps} must be FIRST,LAST with 1 <= FIRST <= LAST",
        )

        require(self.epochs >= 1, f"epochs must be >= 1, got {self.epochs}")
        require(self.log_every_steps >= 1, f"log_every_steps must be >= 1, got {self.log_every_steps}")
        require(self.max_steps is None or self.max_steps >= 1, f"max_steps must be >= 1, got {self.max_steps}")
        require(self.learning_rate > 0, f"learning_rate must be > 0, got {self.learning_rate}")
        require(
            self.eval_every_steps is None or self.eval_every_steps >= 1,
            f"eval_every_steps must be >= 1, got {self.eval_every_steps}",
        )
        require(self.keep_checkpoints >= 1, f"keep_checkpoints must be >= 1, got {self.keep_checkpoints}")
        require(
            self.steps_per_execution >= 0,
            f"steps_per_execution must be >= 0 (0: automatic), got {self.steps_per_execution}",
        )


STRATEGIES = ("off", "mirrored", "multi_worker_mirrored", "parameter_server")


@dataclasses.dataclass(frozen=True)
class DistributionConfig:
    """Which tf.distribute strategy trains, with Model Garden's flag meanings (`compat.modes.distribution`)."""

    distribution_strategy: str = "off"
    num_gpus: int = 0  # mirrored: GPUs to mirror on; 0 mirrors on the CPU

    def __post_init__(self) -> None:
        _require(
            "DistributionConfig",
            self.distribution_strategy in STRATEGIES,
            f"distribution_strategy '{self.distribution_strategy}' must be one of {STRATEGIES}",
        )
        _require("DistributionConfig", self.num_gpus >= 0, f"num_gpus must be >= 0, got {self.num_gpus}")


TUNERS = ("random", "bayesian", "hyperband", "grid")


# What a trial logs after each period (model.compile's loss and accuracy, on both splits, and
# compat/modes/callbacks.py's speed and learning rate): the names a search may optimise.
TUNE_OBJECTIVES = (
    "val_accuracy",
    "val_loss",
    "accuracy",
    "loss",
    "examples_per_second",
    "learning_rate",
)


@dataclasses.dataclass(frozen=True)
class TuneConfig:
    """A keras-tuner search: the algorithm, its budget and what it optimises."""

    tuner: str = "random"
    max_trials: int = 10
    objective: str = "val_accuracy"  # a logged metric; ":min" or ":max" sets the direction
    max_failed_trials: int = 3

    def __post_init__(self) -> None:
        _require("TuneConfig", self.tuner in TUNERS, f"tuner '{self.tuner}' must be one of {TUNERS}")
        name, _, direction = self.objective.partition(":")
        _require(
            "TuneConfig",
            direction in ("", "min", "max"),
            f"objective '{self.objective}' must be NAME, NAME:min or NAME:max",
        )
        # checked here, not after a whole trial, where keras-tuner finds the name missing from the logs
        _require(
            "TuneConfig",
            name in TUNE_OBJECTIVES,
            f"objective '{name}' is not a metric a trial logs; use one of {', '.join(TUNE_OBJECTIVES)}",
        )


MODES = ("keras", "estimator", "tune", "predict")


def check_together(mode: str, pipeline: PipelineConfig, train: TrainConfig, distribution: DistributionConfig) -> None:
    """The rules that span configs, for every caller: train.py's flags and Python programs alike.

    Raises:
      ValueError: naming the settings (`name=value`) that do not go together, and what to do.
    """
    strategy = distribution.distribution_strategy
    _require("mode", mode in MODES, f"mode '{mode}' must be one of {MODES}")
    if mode == "tune":
        _require(
            "DistributionConfig",
            strategy == "off",
            "`mode=tune` runs its trials on one device: search with `distribution_strategy=off`, then train "
            "the best flags under a strategy",
        )
    _require(
        "DistributionConfig",
        mode != "keras" or strategy not in ("multi_worker_mirrored", "parameter_server"),
        f"`distribution_strategy={strategy}` runs with `mode=estimator` only: Keras 3's fit cannot train under "
        "MultiWorkerMirroredStrategy (keras-team/keras#20585) or ParameterServerStrategy; run the same settings "
        "with `mode=estimator` on every task of the TF_CONFIG cluster",
    )
    _require(
        "DistributionConfig",
        strategy != "parameter_server" or pipeline.cache == "disk",
        "`distribution_strategy=parameter_server` needs `cache=disk`: the workers rebuild the training input "
        "from its graph, which must read the cache's files (written by the chief first) rather than run the "
        "decoder's Python fallback; point `cache_dir` at a folder every task sees",
    )
    _require(
        "TrainConfig",
        mode == "keras" or not (train.enable_xla or train.profile_steps),
        "`enable_xla` and `profile_steps` apply to `mode=keras`: the Estimator engine's step loop reads its "
        "input inside the compiled function, which XLA cannot compile, and profiles are taken around Keras' "
        "compiled calls",
    )


def replace_fields(config: Any, values: Mapping[str, Any], renames: Mapping[str, str] | None = None) -> Any:
    """`config` with each field that `values` names set to its value; other names are ignored.

    `renames` maps a value's name to the field's where they differ (the
    `--model` flag sets `ModelConfig.name`). Raises ValueError from the
    config's own checks when the values do not fit together.
    """
    renames = renames or {}
    fields = {field.name for field in dataclasses.fields(config)}
    changes = {renames.get(name, name): value for name, value in values.items() if renames.get(name, name) in fields}
    return dataclasses.replace(config, **changes)
