"""The shared, prefetching audio Dataset builder that feeds every mode.

Stages, in the order of TensorFlow's tf.data performance guide, one function each:

  1. list_files       file paths and labels; shuffled each epoch (cheap: names only)
  2. decode           parallel read + decode (in-graph for 16-bit PCM WAV)
  3. transform        deterministic: length fit and features (STFT, mel, MFCC)
  4. cache            none | memory | disk (persistent, keyed, atomic; `compat.cache`)
  5. batch            after a per-epoch shuffle of the examples (train)
  6. augment          train only, after the cache so each epoch differs; vectorised
                      over the batch (the guide's "batch before map"), since
                      per-example maps cost more than the work itself
  7. repeat           train only (Estimator-style: steps, not epochs, end training)
  8. prefetch         overlaps input with the step; to the GPU when one is visible

Each element is `({feature_key: float32 [frames, bins]}, int32 label)`; the
"predict" split yields the features alone.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable, Union

import tensorflow as tf
from absl import logging

from compat import audio, cache
from compat.config import AUTOTUNE, CACHE_MODES, PipelineConfig
from compat.sources import DataSource, FileTable, SourceIndex, build_index

__all__ = ["AUTOTUNE", "CACHE_MODES", "PipelineConfig", "build_dataset", "class_names", "feature_shape",
           "index", "make_input_fn", "split_size"]

# A source as the public functions take it: a spec string or path, a DataSource, or a run's index.
Source = Union[str, "os.PathLike[str]", DataSource, SourceIndex]
_CHUNK = 32  # clips per STFT call, and per cached element
_NOISE_BANK_CLIPS = 32  # the noise bank holds this many clips' worth of frames


def feature_shape(config: PipelineConfig) -> tuple[int, int]:
    """The `[frames, bins]` shape of one example's features: the model's input shape."""
    return config.feature_spec.shape


def index(source: Source, config: PipelineConfig = PipelineConfig()) -> SourceIndex:
    """The source listed once, with the splits `config` asks for: build it once per run, pass it on.

    An index passes through unchanged, so every public function takes either.
    """
    if isinstance(source, SourceIndex):
        return source
    return build_index(DataSource.parse(source), config.resolved_cache_dir, config.eval_fraction,
                       config.test_fraction)


def class_names(source: Source, config: PipelineConfig = PipelineConfig()) -> tuple[str, ...]:
    """The label names, index-aligned with the integer labels the builder yields."""
    return index(source, config).class_names


def split_size(source: Source, config: PipelineConfig, split: str) -> int:
    """Files in `split` (before any unreadable ones are skipped)."""
    return index(source, config).size(split)


# -- stages -----------------------------------------------------------------


def list_files(table: FileTable, config: PipelineConfig, shuffle: bool) -> tf.data.Dataset:
    """Stage 1: (path, label) pairs; a new order each epoch when `shuffle`."""
    files = tf.data.Dataset.from_tensor_slices(
        (tf.constant(table.paths, tf.string), tf.constant(table.labels, tf.int32))
    )
    if shuffle:
        files = files.shuffle(len(table), seed=config.seed, reshuffle_each_iteration=True)
    return files


def decode(
    files: tf.data.Dataset, config: PipelineConfig, training: bool, bad_files: audio.BadFileLog | None
) -> tf.data.Dataset:
    """Stage 2: parallel read, decode to mono, and fit to the cached window length.

    Training keeps a window `crop_margin_ms` wider on each side, so that
    augmentation can crop and shift after the cache without recomputing
    features. Unreadable files are dropped when skipping them.
    """
    window = window_samples(config, training)

    def read(path: tf.Tensor, label: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        wave, ok = audio.decode_audio(path, config.sample_rate, bad_files)
        return audio.fit_waveform(wave, window), ok, label

    decoded = files.map(read, num_parallel_calls=config.num_parallel_calls, deterministic=config.deterministic)
    if bad_files is not None:
        decoded = decoded.filter(lambda wave, ok, label: ok)
    return decoded.map(lambda wave, ok, label: (wave, label))


def window_samples(config: PipelineConfig, training: bool) -> int:
    """Samples kept per clip before the cache: the clip, plus the crop margin in training."""
    spec = config.feature_spec
    margin_frames = round(config.crop_margin_ms / 1000 * spec.sample_rate / spec.hop) if training else 0
    return spec.clip_samples + 2 * margin_frames * spec.hop


def transform(waves: tf.data.Dataset, config: PipelineConfig, training: bool) -> tf.data.Dataset:
    """Stage 3: features, computed on chunks of clips: `([n, frames, bins], [n])` elements.

    One STFT call for many clips costs less per clip than one call per clip, and
    the cache reads and writes a few large elements faster than many small ones;
    the chunks are split back into examples after the cache.
    """
    spec = config.feature_spec
    shape = _chunk_spec(config, training)[0].shape

    def features(batch: tf.Tensor, labels: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return tf.ensure_shape(audio.compute_features(batch, spec), shape), labels

    chunks = waves.batch(_CHUNK)
    return chunks.map(features, num_parallel_calls=config.num_parallel_calls, deterministic=config.deterministic)


def _chunk_spec(config: PipelineConfig, training: bool) -> tuple[tf.TensorSpec, tf.TensorSpec]:
    spec = config.feature_spec
    frames = spec.frames_in(window_samples(config, training))
    return tf.TensorSpec([None, frames, spec.num_bins], tf.float32), tf.TensorSpec([None], tf.int32)


def _pre_cache_settings(config: PipelineConfig, split: str, training: bool) -> dict:
    """Everything before the cache that shapes an example: the cache key's settings."""
    return {
        "split": "test" if split == "predict" else split,  # predict reads the test files
        "chunk": _CHUNK,
        "window_samples": window_samples(config, training),
        "feature_spec": dataclasses.asdict(config.feature_spec),
        "skip_bad_files": config.skip_bad_files,
    }


def cached_examples(
    table: FileTable, config: PipelineConfig, split: str, training: bool, shard: tuple[int, int] | None
) -> tf.data.Dataset:
    """Stages 1-4: (features, label) examples, through the configured cache.

    `shard` is (num_shards, index) from an `input_context`. A disk entry holds
    the whole split, so it is sharded after reading; the other modes shard the
    file list so that each pipeline decodes only its own files.
    """
    bad_files = audio.BadFileLog() if config.skip_bad_files else None

    def uncached(files: tf.data.Dataset) -> tf.data.Dataset:
        return transform(decode(files, config, training, bad_files), config, training)

    if config.cache == "disk":
        def describe() -> dict:
            skipped = len(bad_files.skipped) if bad_files else 0
            if skipped:
                logging.warning("While caching the %s split: %s", split, bad_files.summary())
            return {"examples": len(table) - skipped, "split": split, "files": len(table),
                    "skipped_files": skipped, "feature": config.feature}

        chunks, examples = cache.through_disk_cache(
            config.resolved_cache_dir,
            cache.fingerprint(table, _pre_cache_settings(config, split, training)),
            build=lambda: uncached(list_files(table, config, shuffle=training)),
            element_spec=_chunk_spec(config, training),
            describe=describe,
            # Training reads whole epochs; evaluation may stop early (steps=N).
            complete_now=not training,
        )
        unbatched = _reshuffle_chunks(chunks, table, config, training).unbatch()
        if examples is not None:  # Keras sizes an evaluation pass by the cardinality
            unbatched = unbatched.apply(tf.data.experimental.assert_cardinality(examples))
        return unbatched if shard is None else unbatched.shard(*shard)

    files = list_files(table, config, shuffle=training)
    if shard is not None:
        files = files.shard(*shard)
    chunks = uncached(files)
    if config.cache == "memory":
        chunks = _reshuffle_chunks(chunks.cache(), table, config, training)
    return chunks.unbatch()


def _reshuffle_chunks(chunks: tf.data.Dataset, table: FileTable, config: PipelineConfig, training: bool
                      ) -> tf.data.Dataset:
    """A cache replays its first pass's order; training gets a new order of chunks each epoch.

    Together with the example shuffle buffer after it, each epoch then mixes the
    whole split, even where the files were listed class by class.
    """
    if not training:
        return chunks
    return chunks.shuffle(-(-len(table) // _CHUNK), seed=config.seed, reshuffle_each_iteration=True)


def batch_examples(examples: tf.data.Dataset, config: PipelineConfig, batch_size: int, training: bool
                   ) -> tf.data.Dataset:
    """Stage 5: batch; training shuffles the examples first (a new order each epoch)."""
    if training:
        examples = examples.shuffle(config.shuffle_buffer, seed=config.seed, reshuffle_each_iteration=True)
    return examples.batch(batch_size, num_parallel_calls=config.num_parallel_calls,
                          deterministic=config.deterministic)


def augment(batches: tf.data.Dataset, config: PipelineConfig) -> tf.data.Dataset:
    """Stage 6 (train): random crop / time shift and noise, applied to whole batches.

    Randomness comes from a seeded `Dataset.random` stream that is redrawn each
    epoch: a run is reproducible from `config.seed`, and epochs differ.
    """
    spec = config.feature_spec
    max_shift = round(config.time_shift_ms / 1000 * spec.sample_rate / spec.hop)
    seeds = tf.data.Dataset.random(seed=config.seed, rerandomize_each_iteration=True).batch(2)
    noise = audio.noise_bank(config.seed, _NOISE_BANK_CLIPS * spec.num_frames, spec.num_bins)

    def apply(batch: tuple[tf.Tensor, tf.Tensor], seed: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        features, labels = batch
        augmented = audio.augment_batch(features, seed, spec.num_frames, max_shift, noise, config.noise_stddev)
        return augmented, labels

    return tf.data.Dataset.zip(batches, seeds).map(
        apply, num_parallel_calls=config.num_parallel_calls, deterministic=config.deterministic
    )


def repeat_and_prefetch(batches: tf.data.Dataset, config: PipelineConfig, training: bool) -> tf.data.Dataset:
    """Stages 7-8: repeat (train), prefetch, and copy batches ahead to a visible GPU."""
    if training:
        batches = batches.repeat()
    batches = batches.prefetch(config.prefetch).with_options(_options(config))
    if config.prefetch_to_device and tf.config.list_logical_devices("GPU"):
        # Must be the last transformation; it overlaps the host-to-device copy with the step.
        batches = batches.apply(tf.data.experimental.prefetch_to_device("/gpu:0", buffer_size=2))
    return batches


def _options(config: PipelineConfig) -> tf.data.Options:
    """Set on purpose rather than left to defaults that may change between releases."""
    options = tf.data.Options()
    options.deterministic = config.deterministic
    options.autotune.enabled = True
    options.experimental_optimization.map_parallelization = True
    options.experimental_optimization.inject_prefetch = True
    if config.private_threadpool_size:
        options.threading.private_threadpool_size = config.private_threadpool_size
    return options


# -- public API -------------------------------------------------------------


def build_dataset(
    source: Source,
    config: PipelineConfig = PipelineConfig(),
    split: str = "train",
    *,
    input_context: tf.distribute.InputContext | None = None,
    batch_size: int | None = None,
) -> tf.data.Dataset:
    """Batches of `({config.feature_key: features}, label)` for `split`; features only for "predict".

    `input_context` (from a distribution strategy) shards the data and turns
    `config.batch_size`, the global batch, into the per-replica batch.
    """
    training = split == "train"
    table = index(source, config).table(split)
    shard = None
    batch_size = batch_size or config.batch_size
    if input_context is not None:
        shard = (input_context.num_input_pipelines, input_context.input_pipeline_id)
        batch_size = input_context.get_per_replica_batch_size(batch_size)
    batches = batch_examples(cached_examples(table, config, split, training, shard), config, batch_size, training)
    if training:
        batches = augment(batches, config)
    key = config.feature_key
    if split == "predict":
        batches = batches.map(lambda features, labels: {key: features})
    else:
        batches = batches.map(lambda features, labels: ({key: features}, labels))
    return repeat_and_prefetch(batches, config, training)


def make_input_fn(
    source: Source, config: PipelineConfig = PipelineConfig(), split: str = "train"
) -> Callable[..., tf.data.Dataset]:
    """An Estimator-style `input_fn` over the builder.

    It declares `params`, `mode`, `config` and `input_context`, so an Estimator
    that passes arguments by signature gives it all four. `params["batch_size"]`
    overrides the batch size; `input_context` shards; predict mode drops labels.
    """
    pipeline_config = config
    source = index(source, config)  # listed once, not at every call

    def input_fn(
        params: dict[str, Any] | None = None,
        mode: str | None = None,
        config: Any = None,  # the Estimator's RunConfig; the pipeline has its own
        input_context: tf.distribute.InputContext | None = None,
    ) -> tf.data.Dataset:
        del config
        batch_size = (params or {}).get("batch_size")
        chosen_split = "predict" if mode == "infer" else split
        return build_dataset(
            source, pipeline_config, chosen_split, input_context=input_context, batch_size=batch_size
        )

    return input_fn
