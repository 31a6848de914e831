"""Every command-line flag, defined once, grouped by concern; and the one function that reads them.

`configs_from_flags()` turns parsed flags into the frozen configs that the rest
of the toolkit takes; nothing else reads `FLAGS`. Defaults come from the
configs themselves, so a flag and its config field cannot disagree.
"""

from __future__ import annotations

import dataclasses
import os

from absl import flags

import models
from compat.config import (
    AUTOTUNE,
    CACHE_MODES,
    DTYPES,
    FEATURES,
    MODES,
    STRATEGIES,
    TUNERS,
    DistributionConfig,
    PipelineConfig,
    TrainConfig,
    TuneConfig,
    check_together,
    replace_fields,
)
from compat.core import atomic
from compat.data.sources import DataSource

FLAGS = flags.FLAGS
_GROUP_STARTS: list[tuple[str, frozenset[str]]] = []  # (concern, the flags defined before it)


def _group(title: str) -> None:
    """Starts a concern: the flags defined from here to the next `_group` are listed under `title` in --help."""
    _GROUP_STARTS.append((title, frozenset(FLAGS)))


_PIPELINE = PipelineConfig()
# The rate a dataset's files are recorded at: decoding them needs no resampling.
NATIVE_SAMPLE_RATES = {"fsdd": 8000, "synthetic": 16000}
_TRAIN = TrainConfig()

# -- mode -------------------------------------------------------------------
_group("mode")
flags.DEFINE_enum(
    "mode",
    "keras",
    list(MODES),
    "keras: model.fit; estimator: the tf.estimator API (compat.estimator); tune: keras-tuner search; "
    "predict: classify the audio files named after the flags with --model_dir's export.",
)

# -- data -------------------------------------------------------------------
_group("data")
flags.DEFINE_enum(
    "dataset",
    "synthetic",
    ["synthetic", "fsdd", "folder", "manifest"],
    "synthetic: the built-in default (no data needed); fsdd: the Free Spoken Digit "
    "Dataset (downloaded unless --data_dir); folder: --data_dir/<label>/*.wav; "
    "manifest: a CSV of path,label[,split] (--manifest).",
)
flags.DEFINE_string("data_dir", None, "Audio folder: FSDD's recordings, or one sub-folder per class.")
flags.DEFINE_string("manifest", None, "CSV manifest of path,label[,split] rows (--dataset=manifest).")
flags.DEFINE_bool(
    "skip_bad_files", _PIPELINE.skip_bad_files, "Skip unreadable audio files (counted and logged) instead of stopping."
)

# -- pipeline ---------------------------------------------------------------
_group("pipeline")
flags.DEFINE_integer("batch_size", _PIPELINE.batch_size, "Global batch size.", lower_bound=1)
flags.DEFINE_integer(
    "num_parallel_calls",
    _PIPELINE.num_parallel_calls,
    "Parallel decode/feature calls; -1 is AUTOTUNE.",
    lower_bound=AUTOTUNE,
)
flags.DEFINE_integer("prefetch", _PIPELINE.prefetch, "Batches prepared ahead; -1 is AUTOTUNE.", lower_bound=AUTOTUNE)
flags.DEFINE_integer(
    "private_threadpool_size",
    _PIPELINE.private_threadpool_size,
    "Threads of a private tf.data pool; 0 shares TensorFlow's.",
    lower_bound=0,
)
flags.DEFINE_enum(
    "cache", _PIPELINE.cache, list(CACHE_MODES), "Where decoded features are kept between epochs and runs."
)
flags.DEFINE_string(
    "cache_dir", None, "Cache folder (datasets, downloads); default $ESTIMATOR_COMPAT_CACHE_DIR or ~/.cache."
)
flags.DEFINE_integer("shuffle_buffer", _PIPELINE.shuffle_buffer, "Examples in the shuffle buffer.", lower_bound=1)
flags.DEFINE_bool(
    "deterministic",
    _PIPELINE.deterministic,
    "Bit-reproducible training order (slower parallel stages); evaluation splits are always in file order.",
)
flags.DEFINE_integer(
    "sample_rate",
    None,
    "Audio is resampled to this rate (Hz); default: the dataset's "
    f"own ({', '.join(f'{k} {v}' for k, v in NATIVE_SAMPLE_RATES.items())}), else "
    f"{_PIPELINE.sample_rate}.",
    lower_bound=1000,
)
flags.DEFINE_float("clip_seconds", _PIPELINE.clip_seconds, "Clip length the model sees.", lower_bound=0.05)
flags.DEFINE_enum("feature", _PIPELINE.feature, list(FEATURES), "Model input features.")
flags.DEFINE_float("frame_length_ms", _PIPELINE.frame_length_ms, "STFT window (ms).", lower_bound=1)
flags.DEFINE_float("frame_step_ms", _PIPELINE.frame_step_ms, "STFT hop (ms).", lower_bound=0.5)
flags.DEFINE_integer("n_mels", _PIPELINE.n_mels, "Mel bands (log_mel, mfcc).", lower_bound=1)
flags.DEFINE_integer("n_mfcc", _PIPELINE.n_mfcc, "MFCC coefficients kept.", lower_bound=1)
flags.DEFINE_float(
    "crop_margin_ms",
    _PIPELINE.crop_margin_ms,
    "Training clips are cached this much wider on each side, for random crops.",
    lower_bound=0,
)
flags.DEFINE_float(
    "time_shift_ms",
    _PIPELINE.time_shift_ms,
    "Augmentation: random crop/shift of up to this much (<= crop_margin_ms).",
    lower_bound=0,
)
flags.DEFINE_float(
    "noise_stddev",
    _PIPELINE.noise_stddev,
    "Augmentation: noise, relative to each example's standard deviation.",
    lower_bound=0,
)

# -- model ------------------------------------------------------------------
_group("model")
flags.DEFINE_enum("model", models.ModelConfig.name, models.names(), "Architecture (models/).")
flags.DEFINE_integer("width", None, "Filters of the first convolution; default: the model's own.", lower_bound=1)
flags.DEFINE_integer("depth", None, "Convolution blocks; default: the model's own.", lower_bound=0)
flags.DEFINE_float(
    "dropout", None, "Dropout before the classifier; default: the model's own.", lower_bound=0, upper_bound=0.95
)

# -- training ---------------------------------------------------------------
_group("training")
flags.DEFINE_integer("epochs", _TRAIN.epochs, "Passes over the training split (unless --max_steps).", lower_bound=1)
flags.DEFINE_integer("max_steps", None, "Training steps; overrides --epochs.", lower_bound=1)
flags.DEFINE_float("learning_rate", _TRAIN.learning_rate, "Peak learning rate (Adam, cosine decay).", lower_bound=0)
flags.DEFINE_integer(
    "eval_every_steps", None, "Validate and checkpoint every N steps; default: once per epoch.", lower_bound=1
)
flags.DEFINE_integer(
    "log_every_steps",
    _TRAIN.log_every_steps,
    "Write TensorBoard scalars (loss, accuracy, learning_rate, examples_per_second; the same tags "
    "in every mode) and a progress line every N steps.",
    lower_bound=1,
)
flags.DEFINE_integer(
    "steps_per_execution",
    _TRAIN.steps_per_execution,
    "Training steps per compiled call (no Python between them); 0: the largest divisor of "
    "the evaluation period up to 64.",
    lower_bound=0,
)
flags.DEFINE_integer("keep_checkpoints", _TRAIN.keep_checkpoints, "Checkpoints kept in --model_dir.", lower_bound=1)
flags.DEFINE_integer(
    "seed", _PIPELINE.seed, "Seed for data order, augmentation and weights.", lower_bound=0, upper_bound=2**31 - 1
)

# -- performance (GPU switches) ---------------------------------------------
_group("performance (GPU switches)")
flags.DEFINE_enum(
    "dtype",
    _TRAIN.dtype,
    list(DTYPES),
    "Keras dtype policy: mixed_float16 (GPU) or mixed_bfloat16 (TPU, recent CPUs/GPUs) compute in "
    "16 bits with float32 weights and logits.",
)
flags.DEFINE_bool("enable_xla", _TRAIN.enable_xla, "Compile the training step with XLA (--mode=keras).")
flags.DEFINE_list(
    "profile_steps",
    None,
    "FIRST,LAST: write a TensorBoard profile to <model_dir>/logs/train of these training steps of "
    "this process (whole compiled calls of --steps_per_execution steps); its input-pipeline page "
    "shows whether the step waited on input (--mode=keras).",
)

# -- distribution ---------------------------------------------------------
_group("distribution")
_DISTRIBUTION = DistributionConfig()
flags.DEFINE_enum(
    "distribution_strategy",
    _DISTRIBUTION.distribution_strategy,
    list(STRATEGIES),
    "off: one device; mirrored: this machine's GPUs (--num_gpus; the CPU when 0); "
    "multi_worker_mirrored: the TF_CONFIG cluster (--mode=estimator; Keras 3 fit cannot); "
    "parameter_server: the TF_CONFIG cluster with ps tasks, asynchronous (--mode=estimator; every task runs "
    "the same command).",
)
flags.DEFINE_integer(
    "num_gpus", _DISTRIBUTION.num_gpus, "GPUs to mirror on (--distribution_strategy=mirrored).", lower_bound=0
)
flags.DEFINE_string(
    "tf_data_service",
    None,
    "grpc://HOST:PORT of a tf.data service dispatcher (python -m compat.data.service): its "
    "workers read and decode the training split; batching and augmentation stay here.",
)

# -- tuning (--mode=tune) ---------------------------------------------------
_group("tuning (--mode=tune)")
_TUNE = TuneConfig()
flags.DEFINE_enum("tuner", _TUNE.tuner, list(TUNERS), "keras-tuner algorithm.")
flags.DEFINE_integer("max_trials", _TUNE.max_trials, "Trials to run (random, bayesian, grid).", lower_bound=1)
flags.DEFINE_string(
    "objective",
    _TUNE.objective,
    "Metric to optimise, any logged one; append :min or :max to set the direction "
    "(default: min for losses, max otherwise).",
)
flags.DEFINE_integer(
    "max_failed_trials", _TUNE.max_failed_trials, "Stop after this many failed trials in a row.", lower_bound=1
)
flags.DEFINE_enum(
    "tune_target",
    "model",
    ["model", "pipeline"],
    "model: search what the model learns from (full training trials); pipeline: measure "
    "the builder's examples/s for speed-only settings and pick the fastest.",
)

# -- output -----------------------------------------------------------------
_group("output")
flags.DEFINE_string(
    "model_dir",
    None,
    "Checkpoints, TensorBoard logs, metrics.json, flags and exports (default: runs/<mode>; --mode=predict "
    "reads runs/keras). Rerunning a command with the same --model_dir resumes it.",
)
flags.DEFINE_bool("export", _TRAIN.export, "Write model.keras and a SavedModel for serving at the end.")


@flags.multi_flags_validator(
    ["dataset", "data_dir", "manifest"],
    message=(
        "the data flags do not fit --dataset: --dataset=folder needs --data_dir (one sub-folder per class), "
        "--dataset=fsdd takes an optional --data_dir, --dataset=manifest needs --manifest and takes no --data_dir, "
        "and --dataset=synthetic (the default) takes neither: add --dataset=folder|fsdd|manifest to train on your data"
    ),
)
def _data_flags_agree(values: dict) -> bool:
    dataset, data_dir, manifest = values["dataset"], values["data_dir"], values["manifest"]
    if dataset == "folder":
        return bool(data_dir) and not manifest
    if dataset == "manifest":
        return bool(manifest) and not data_dir
    if dataset == "fsdd":
        return not manifest
    return not data_dir and not manifest


@flags.validator("profile_steps", message="--profile_steps must be FIRST,LAST: two step numbers, 1 <= FIRST <= LAST")
def _profile_range(value) -> bool:
    if value is None:
        return True
    try:
        first, last = (int(step) for step in value)
    except ValueError:
        return False
    return 1 <= first <= last


@flags.validator(
    "model_dir",
    message=(
        "--model_dir must be a folder that can be made: a local path, or a URL of a file system TensorFlow has "
        "here (gs://, ram://, and those its plugins add), and not an existing file (or a folder inside one)"
    ),
)
def _usable_model_dir(value: str | None) -> bool:
    if value is None:  # runs/<mode>, below the working folder
        return True
    if not value.strip():
        raise flags.ValidationError("--model_dir is empty: give a folder, or leave the flag out for runs/<mode>")
    value = _local_path(value)
    if atomic.is_remote(value):
        return True  # its file system is checked once TensorFlow is loaded, quietly (check_model_dir_scheme)
    path = os.path.abspath(value)
    while not os.path.exists(path):  # the nearest part that exists must be a folder
        path = os.path.dirname(path)
    return os.path.isdir(path)


@flags.multi_flags_validator(
    ["mode", "model_dir"],
    message=("--mode=tune needs a local --model_dir: keras-tuner writes its trials with local file operations"),
)
def _tune_locally(values: dict) -> bool:
    return values["mode"] != "tune" or not atomic.is_remote(_local_path(values["model_dir"] or ""))


_TUNING_FLAGS = ("tuner", "max_trials", "objective", "max_failed_trials", "tune_target")


@dataclasses.dataclass(frozen=True)
class Configs:
    source: DataSource
    pipeline: PipelineConfig
    model: models.ModelConfig
    train: TrainConfig
    tune: TuneConfig
    distribution: DistributionConfig
    tune_target: str
    model_dir: str
    mode: str
    explicit: frozenset  # flags given on the command line or in a flagfile: fixed in a search


def _local_path(value: str) -> str:
    """`file:///x` is the local path `/x`: written with local file operations, never as a folder `file:`."""
    return value[len("file://") :] if value.startswith("file://") else value


_DEFAULT_FOLDER = {"predict": "keras"}  # --mode=predict classifies with the default keras run's export


def _model_dir(value: str) -> str:
    """A URL of another of TensorFlow's file systems as given; a local path made absolute."""
    value = _local_path(value)
    return value if atomic.is_remote(value) else os.path.abspath(value)


def data_source() -> DataSource:
    if FLAGS.dataset == "manifest":
        return DataSource("manifest", path=FLAGS.manifest)
    return DataSource(FLAGS.dataset, path=FLAGS.data_dir)


# Flags read into Configs outside a config dataclass, and flags whose config field has another name.
_NOT_IN_A_CONFIG = {
    "dataset": "source",
    "data_dir": "source",
    "manifest": "source",
    "model_dir": "model_dir",
    "mode": "mode",
    "tune_target": "tune_target",
}
_RENAMED = {"tf_data_service": "data_service", "model": "name"}
# One flag for several fields, on purpose: --seed seeds the shuffle and the model's initial weights.
_SHARED = {"seed": ["pipeline.seed", "train.seed"]}
_CONFIG_CLASSES = {
    "pipeline": PipelineConfig,
    "model": models.ModelConfig,
    "train": TrainConfig,
    "tune": TuneConfig,
    "distribution": DistributionConfig,
}


def flag_destinations() -> dict[str, list[str]]:
    """Each flag this module defines -> where its value goes (`config.field`, or a Configs field).

    A flag must land in exactly one place (or in the places _SHARED lists): configs_from_flags
    refuses to run otherwise, so a config field renamed without its flag is caught at the first run
    (and by tests/test_flags.py), instead of leaving a flag that parses and does nothing.
    """
    import sys

    fields = {kind: {field.name for field in dataclasses.fields(cls)} for kind, cls in _CONFIG_CLASSES.items()}
    destinations = {}
    for flag in FLAGS.get_key_flags_for_module(sys.modules[__name__]):
        field = _RENAMED.get(flag.name, flag.name)
        places = [f"{kind}.{field}" for kind, names in fields.items() if field in names]
        if flag.name in _NOT_IN_A_CONFIG:
            places.append(_NOT_IN_A_CONFIG[flag.name])
        destinations[flag.name] = places
    return destinations


def _check_every_flag_lands_once() -> None:
    wrong = {
        name: places
        for name, places in flag_destinations().items()
        if (places != _SHARED[name] if name in _SHARED else len(places) != 1)
    }
    if wrong:
        raise AssertionError(f"flags that set no config field or several (rename the field or the flag): {wrong}")


def check_model_dir_scheme(model_dir: str) -> None:
    """Refuses a --model_dir URL whose file system this TensorFlow lacks (s3:// without tensorflow-io): such a
    URL would be written to a local folder of that name.

    Raises:
        ValueError: naming the flag, the file systems TensorFlow has, and what to do.
    """
    if not atomic.is_remote(model_dir):
        return
    import tensorflow as tf

    scheme = model_dir.split("://", 1)[0]
    schemes = sorted(name for name in tf.io.gfile.get_registered_schemes() if name and name != "file")
    if scheme not in schemes:
        raise ValueError(
            f"--model_dir={model_dir}: this TensorFlow has no {scheme}:// file system (it has "
            f"{', '.join(name + '://' for name in schemes)}); install the package that adds it (tensorflow-io "
            "for s3:// and hdfs://), or give a local folder"
        )


def in_flag_words(message: str) -> str:
    """A configuration's refusal (`TrainConfig: learning_rate must be > 0`) in the command line's words: the
    config class left out, each field named by its flag (`--learning_rate must be > 0`)."""
    import re
    import sys

    message = re.sub(r"^\w+Config: ", "", message)
    fields = {
        _RENAMED.get(flag.name, flag.name): flag.name for flag in FLAGS.get_key_flags_for_module(sys.modules[__name__])
    }
    names = sorted((name for name in fields if name != "name"), key=len, reverse=True)  # 'name' is too common a word
    if not names:
        return message
    return re.sub(
        r"(?<![\w`-])(" + "|".join(map(re.escape, names)) + r")(?!\w)", lambda m: "--" + fields[m.group(1)], message
    )


def configs_from_flags() -> Configs:
    """The one place that reads FLAGS. A value the configs reject raises ValueError naming it."""
    import sys

    _check_every_flag_lands_once()
    if FLAGS.model_dir:
        check_model_dir_scheme(_local_path(FLAGS.model_dir))
    ours = FLAGS.get_key_flags_for_module(sys.modules[__name__])  # absl's own flags set no config
    values = {_RENAMED.get(flag.name, flag.name): flag.value for flag in ours}
    if values["profile_steps"] is not None:
        values["profile_steps"] = tuple(int(step) for step in values["profile_steps"])
    if values["sample_rate"] is None:
        values["sample_rate"] = NATIVE_SAMPLE_RATES.get(FLAGS.dataset, _PIPELINE.sample_rate)
    pipeline, train = replace_fields(PipelineConfig(), values), replace_fields(TrainConfig(), values)
    distribution = replace_fields(DistributionConfig(), values)
    check_together(FLAGS.mode, pipeline, train, distribution)
    return Configs(
        source=data_source(),
        pipeline=pipeline,
        model=replace_fields(models.ModelConfig(), values),
        train=train,
        tune=replace_fields(TuneConfig(), values),
        distribution=distribution,
        tune_target=FLAGS.tune_target,
        model_dir=_model_dir(FLAGS.model_dir or os.path.join("runs", _DEFAULT_FOLDER.get(FLAGS.mode, FLAGS.mode))),
        mode=FLAGS.mode,
        explicit=frozenset(name for name in FLAGS if FLAGS[name].present),
    )


def grouped_help() -> str:
    """`--help`: this module's flags grouped by concern, in definition order, each with its default."""
    import sys

    ours = {flag.name: flag for flag in FLAGS.get_key_flags_for_module(sys.modules[__name__])}
    ends = [defined for _, defined in _GROUP_STARTS[1:]] + [frozenset(FLAGS)]
    lines = [sys.modules["__main__"].__doc__ or "", ""]
    for (title, before), after in zip(_GROUP_STARTS, ends):
        lines.append(f"{title}:")
        for name in (name for name in FLAGS if name in after - before and name in ours):
            flag = ours[name]
            default = "" if flag.default is None else f" (default: {flag.default_as_str})"
            lines.append(f"  --{name}: {flag.help}{default}")
        lines.append("")
    lines.append("--helpfull lists absl's own flags too; --flagfile=FILE reads flags from a file.")
    return "\n".join(lines)


def save_flagfile(
    path: str, overrides: dict | None = None, drop: tuple[str, ...] = (), keep_previous_as: str | None = None
) -> None:
    """Writes the flags the user set (on the command line or in a flagfile): `--flagfile=path` repeats
    the run, and a search started from it searches what the user left open.

    `overrides` adds or replaces values (a tuning result); flags in `drop` are left out. With
    `keep_previous_as`, a file already at `path` holding other flags is kept as `<stem>.<keep_previous_as>.txt`.
    """
    import sys

    overrides = overrides or {}
    lines = []
    for flag in FLAGS.get_key_flags_for_module(sys.modules[__name__]):
        if flag.name in drop or not (flag.present or flag.name in overrides):
            continue
        if flag.name in overrides:
            value = overrides[flag.name]
            line = f"--{'' if value else 'no'}{flag.name}" if isinstance(value, bool) else f"--{flag.name}={value}"
        else:
            line = flag.serialize()
        if line:
            lines.append(line)
    text = "\n".join(lines) + "\n"
    if keep_previous_as:
        import tensorflow as tf  # the model folder may be a bucket (gs://)

        previous = tf.io.gfile.GFile(path).read() if tf.io.gfile.exists(path) else text
        if previous != text:
            stem, extension = os.path.splitext(path)
            atomic.write_text(f"{stem}.{keep_previous_as}{extension}", previous)
    atomic.write_text(path, text)


def save_best_flagfile(path: str, best_values: dict, run_dir: str) -> None:
    """A flagfile that trains a search's best trial: `train.py --flagfile=<path> --mode=keras`."""
    save_flagfile(path, {**best_values, "model_dir": run_dir}, drop=("mode", *_TUNING_FLAGS))


def save_front_flagfiles(folder: str, front: dict[str, dict], runs_folder: str) -> None:
    """`<folder>/<trial>.flags` for each trial of a search's accuracy/speed front ({trial: its values}),
    each training into `<runs_folder>/<trial>`; a resumed search's front replaces the last one."""
    os.makedirs(folder, exist_ok=True)
    for stale in os.listdir(folder):
        os.remove(os.path.join(folder, stale))
    for trial, values in front.items():
        save_best_flagfile(os.path.join(folder, f"{trial}.flags"), values, os.path.join(runs_folder, trial))
