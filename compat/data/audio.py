"""Audio decoding and feature extraction: pure functions for `tf.data` maps.

The hot path stays in TensorFlow ops: a canonical 16-bit PCM WAV at the
configured sample rate is read and decoded in-graph (`tf.audio.decode_wav`),
which scales with `num_parallel_calls`. Everything else (FLAC, OGG, 24-bit or
float WAV, other sample rates, files with unusual headers) goes through
soundfile and soxr inside `tf.numpy_function`, which holds the GIL and so does
not scale; the persistent cache makes that a one-time cost.

Shapes: a waveform is float32 `[samples]` in [-1, 1]; every feature is
float32 `[frames, bins]` (the waveform feature is `[samples, 1]`), so one
augmentation and batching code path serves them all.
"""

from __future__ import annotations

import functools
import os
import stat
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import soundfile
import soxr
import tensorflow as tf
from absl import logging

from compat.config import FEATURES, FeatureSpec  # noqa: F401  (FEATURES: re-exported)
from compat.core.errors import UserError

# Added before taking logs so silence maps to a finite floor, not -inf.
LOG_OFFSET = 1e-6
# A canonical WAV header: RIFF(12) + "fmt " chunk of 16 bytes (24) + "data" chunk header (8).
_CANONICAL_WAV_HEADER_BYTES = 44
_HEADER_BLOCK = 1024  # files whose headers are checked together, by one set of NumPy calls


class BadAudioFileError(UserError, ValueError):
    """A file could not be read as audio. The message names the file and the fix."""

    exit_code = 1  # the run stopped on the way

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(
            f"cannot read audio file '{path}': {reason}. Fix or remove the file, or "
            "pass `skip_bad_files=True` to skip unreadable files."
        )


def bad_audio_file_message(error: BaseException) -> str | None:
    """The BadAudioFileError message inside an error a tf.data pipeline raised while decoding (TensorFlow
    wraps it, with the Python traceback, in an OpError's text); None when there is none."""
    if isinstance(error, BadAudioFileError):
        return str(error)
    marker = f"{BadAudioFileError.__module__}.{BadAudioFileError.__name__}: "
    for line in str(getattr(error, "message", error)).splitlines():
        if marker in line:
            return line.split(marker, 1)[1].strip()
    return None


class BadFileLog:
    """Thread-safe record of the files skipped because they could not be decoded."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.skipped: list[tuple[str, str]] = []

    def add(self, path: str, reason: str) -> None:
        with self._lock:
            self.skipped.append((path, reason))
        logging.warning("Skipping unreadable audio file %s: %s", path, reason)

    def summary(self, limit: int = 5) -> str:
        with self._lock:
            names = ", ".join(path for path, _ in self.skipped[:limit])
            more = "" if len(self.skipped) <= limit else ", ..."
            return f"{len(self.skipped)} unreadable file(s) skipped: {names}{more}"


_SOUNDFILE_ERRORS = (soundfile.LibsndfileError, RuntimeError, OSError, TypeError)


def _check_header(path: str) -> None:
    """Raises BadAudioFileError unless libsndfile reads `path`'s header as whole audio."""
    try:
        info = soundfile.info(path)
    except _SOUNDFILE_ERRORS as error:
        raise BadAudioFileError(path, f"not a readable audio file ({error})") from error
    # libsndfile reads a truncated WAV silently; its header report says so.
    if "(should be" in info.extra_info:
        raise BadAudioFileError(path, "the file is truncated (header length and data disagree)")


def _read_with_soundfile(path: str, sample_rate: int) -> np.ndarray:
    """Reads any format libsndfile knows, mixes to mono, resamples. Raises BadAudioFileError."""
    _check_header(path)
    try:
        data, file_rate = soundfile.read(path, dtype="float32", always_2d=True)
    except _SOUNDFILE_ERRORS as error:
        raise BadAudioFileError(path, f"not a readable audio file ({error})") from error
    if data.shape[0] == 0:
        raise BadAudioFileError(path, "the file holds no audio frames")
    # Float files can hold NaN or infinity; one such sample makes every feature of the clip, and then
    # the loss, NaN. Integer PCM (the in-graph path) cannot.
    finite = np.isfinite(data)
    if not finite.all():
        frame = int(np.argmin(finite.all(axis=1)))
        raise BadAudioFileError(path, f"sample {frame} is {data[frame][~finite[frame]][0]} (NaN or infinite samples)")
    mono = data.mean(axis=1)
    if file_rate != sample_rate:
        mono = soxr.resample(mono, file_rate, sample_rate)
    return mono.astype(np.float32)


def _fallback_decoder(sample_rate: int, bad_files: BadFileLog | None):
    """Returns a numpy function path -> (waveform, ok) for `tf.numpy_function`."""

    def decode(path: bytes | np.ndarray) -> tuple[np.ndarray, np.bool_]:
        name = np.asarray(path).item().decode()
        try:
            return _read_with_soundfile(name, sample_rate), np.bool_(True)
        except BadAudioFileError as error:
            if bad_files is None:
                raise
            bad_files.add(name, error.reason)
            return np.zeros([0], np.float32), np.bool_(False)

    return decode


def _canonical_header() -> tuple[np.ndarray, np.ndarray]:
    """The bytes a canonical 16-bit PCM WAV header must have, and which of the 44 are fixed."""
    template, fixed = np.zeros(_CANONICAL_WAV_HEADER_BYTES, np.int64), np.zeros(_CANONICAL_WAV_HEADER_BYTES, bool)
    for offset, value in [
        (0, b"RIFF"),
        (8, b"WAVEfmt "),
        (16, b"\x10\0\0\0"),
        (20, b"\x01\0"),
        (34, b"\x10\0"),
        (36, b"data"),
    ]:
        template[offset : offset + len(value)] = list(value)
        fixed[offset : offset + len(value)] = True
    return template, fixed


_HEADER_TEMPLATE, _HEADER_FIXED = _canonical_header()


def _little_endian(header: Any, start: int, length: int) -> Any:
    """The unsigned integer in `header[..., start:start + length]` (bytes as int64): NumPy or TensorFlow."""
    return sum(header[..., start + i] * (1 << (8 * i)) for i in range(length))


def _decodes_in_graph(header: Any, size: Any, sample_rate: int, xp: Any) -> Any:
    """The one rule for `tf.audio.decode_wav`, on headers `[..., 44]` of int64 bytes and the files' sizes `[...]`,
    in `xp`: NumPy (`np`) or TensorFlow's NumPy API (`tf.experimental.numpy`).

    A 44-byte-header, 16-bit PCM WAV ("fmt " chunk of 16 bytes, format 1, 16 bits,
    then "data") at `sample_rate`, whose byte rate and block size agree with its
    channels (decode_wav refuses them otherwise), holding at least one whole frame,
    and nothing after its data chunk (decode_wav reads on past it). Such a file
    decodes there with no error and no resampling; any other goes to soundfile, which
    names the file on error (decode_wav's own errors do not say which file failed).
    """
    channels = _little_endian(header, 22, 2)
    frame_bytes = 2 * channels
    data_bytes = _little_endian(header, 40, 4)
    return (
        xp.all((header == _HEADER_TEMPLATE) | ~_HEADER_FIXED, axis=-1)
        & (_little_endian(header, 24, 4) == sample_rate)
        & (_little_endian(header, 28, 4) == sample_rate * frame_bytes)
        & (_little_endian(header, 32, 2) == frame_bytes)
        & (channels > 0)
        & (data_bytes >= frame_bytes)
        & (data_bytes % xp.maximum(frame_bytes, 1) == 0)
        & (size == _CANONICAL_WAV_HEADER_BYTES + data_bytes)
    )


def is_canonical_pcm16_wav(contents: tf.Tensor, sample_rate: int) -> tf.Tensor:
    """True when `tf.audio.decode_wav` decodes `contents` without error to `sample_rate` (`_decodes_in_graph`)."""
    size = tf.cast(tf.strings.length(contents), tf.int64)
    header = tf.cast(tf.io.decode_raw(tf.strings.substr(contents, 0, _CANONICAL_WAV_HEADER_BYTES), tf.uint8), tf.int64)
    header = tf.pad(header, [[0, _CANONICAL_WAV_HEADER_BYTES - tf.shape(header)[0]]])  # short files
    return _decodes_in_graph(header, size, sample_rate, tf.experimental.numpy)


def all_decode_in_graph(paths: Sequence[str], sample_rate: int) -> bool:
    """True when every file passes `_decodes_in_graph`, by its first 44 bytes, read here.

    Such files need none of `decode_audio`'s per-file check and branch (`decode_wav_file`):
    the check runs once per file in NumPy, before decoding, instead of in every file's
    graph, where with its branch it cost about a third of the decode stage's CPU
    (bench/stages.py). It stops after the first block of files with one that fails. Files
    Python cannot open (a `gs://` path) or that are not regular files (a named pipe) answer
    False: they take the checked path. A file rewritten after this check and before it is
    read fails in decode_wav with an error that does not name it, so the builder checks
    right before each pass that reads the files.
    """
    return all(bool(passes.all()) for _, passes, _ in _header_blocks(paths, sample_rate))


def _header_blocks(paths: Sequence[str], sample_rate: int) -> Iterator[tuple[Sequence[str], np.ndarray, np.ndarray]]:
    """`(paths, passes [n], readable [n])` for blocks of `paths` in order: whether each file passes
    `_decodes_in_graph` by its header, and whether Python could read it here.

    The rule runs on a block's headers at once: one set of NumPy calls per block instead
    of a dozen calls per file, which cost more than reading the headers (FSDD's 3,000
    files: 34 us a file checked one by one, under 5 us in blocks).
    """
    for start in range(0, len(paths), _HEADER_BLOCK):
        block = paths[start : start + _HEADER_BLOCK]
        headers, sizes, readable = _read_headers(block)
        yield block, _decodes_in_graph(headers, sizes, sample_rate, np) & readable, readable


def _read_headers(paths: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The files' first 44 bytes `[n, 44]` (int64; zeros past a short file's end), their sizes `[n]`,
    and whether Python could read each here `[n]`: not a `gs://` path, a missing file or a named pipe."""
    raw = bytearray(len(paths) * _CANONICAL_WAV_HEADER_BYTES)
    sizes = np.zeros(len(paths), np.int64)
    readable = np.zeros(len(paths), bool)
    for i, path in enumerate(paths):
        try:
            # Never opened unless a regular file: opening a named pipe would wake (or wait for) its writer.
            if not stat.S_ISREG(os.stat(path).st_mode):
                continue
            # Non-blocking all the same: the path may have become a pipe since; fstat then turns it away.
            descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            continue
        try:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode):
                continue
            head = _read_up_to(descriptor, _CANONICAL_WAV_HEADER_BYTES)
        except OSError:
            continue
        finally:
            os.close(descriptor)
        raw[i * _CANONICAL_WAV_HEADER_BYTES : i * _CANONICAL_WAV_HEADER_BYTES + len(head)] = head
        sizes[i], readable[i] = info.st_size, True
    headers = np.frombuffer(bytes(raw), np.uint8).reshape(len(paths), _CANONICAL_WAV_HEADER_BYTES)
    return headers.astype(np.int64), sizes, readable


def _read_up_to(descriptor: int, size: int) -> bytes:
    """The file's first `size` bytes, or all of a shorter one: one `os.read` may return fewer (FUSE,
    network file systems)."""
    head = b""
    while len(head) < size:
        more = os.read(descriptor, size - len(head))
        if not more:
            break
        head += more
    return head


def check_headers(paths: Sequence[str], sample_rate: int) -> None:
    """Raises BadAudioFileError naming the first of `paths` whose header is not audio.

    Called before a run's first epoch, so that a file that is no audio stops the
    run before it trains rather than when the pass reaches it. Canonical 16-bit
    WAVs are checked by their first 44 bytes; other files by libsndfile's header
    reader (about 0.2 ms a file). Damage a header does not show (NaN samples)
    is still found when the file is decoded. Files Python cannot open here (a
    `gs://` path, a pipe) are left to the decoder.
    """
    for block, passes, readable in _header_blocks(paths, sample_rate):
        for i in np.flatnonzero(readable & ~passes):  # in order: the first bad file is named
            _check_header(block[int(i)])


def decode_wav_file(path: tf.Tensor) -> tf.Tensor:
    """Reads one file that `all_decode_in_graph` accepted: its mono float32 waveform `[samples]`."""
    return decode_wav_file_contents(tf.io.read_file(path))


def decode_wav_file_contents(contents: tf.Tensor) -> tf.Tensor:
    """A file's bytes that passed `_decodes_in_graph` -> its mono float32 waveform `[samples]`."""
    audio, _ = tf.audio.decode_wav(contents)
    return tf.reduce_mean(audio, axis=1)


def decode_audio(path: tf.Tensor, sample_rate: int, bad_files: BadFileLog | None = None) -> tuple[tf.Tensor, tf.Tensor]:
    """Reads one file: returns (mono float32 waveform `[samples]` at `sample_rate`, ok).

    `ok` is False only for an unreadable file when `bad_files` is given (skip mode);
    without it an unreadable file raises an error that names it.
    """
    fallback = _fallback_decoder(sample_rate, bad_files)

    def via_soundfile() -> tuple[tf.Tensor, tf.Tensor]:
        wave, ok = tf.numpy_function(fallback, [path], [tf.float32, tf.bool], stateful=False)
        return tf.ensure_shape(wave, [None]), tf.ensure_shape(ok, [])

    contents = tf.io.read_file(path)
    in_graph = is_canonical_pcm16_wav(contents, sample_rate)
    return tf.cond(in_graph, lambda: (decode_wav_file_contents(contents), tf.constant(True)), via_soundfile)


def fit_waveform(wave: tf.Tensor, length: int) -> tf.Tensor:
    """Centres `wave` in `length` samples: short clips are padded with silence on both
    sides, long ones centre-cropped, so a sound keeps its place relative to the middle."""
    pad = tf.maximum(0, length - tf.shape(wave)[0])
    wave = tf.pad(wave, [[pad // 2, pad - pad // 2]])
    start = (tf.shape(wave)[0] - length) // 2
    return wave[start : start + length]


@functools.lru_cache(maxsize=16)
def _mel_matrix(n_mels: int, bins: int, sample_rate: int, fmin: float, fmax: float) -> np.ndarray:
    """The mel filter bank as a constant: built in a traced function it costs hundreds of ops to trace."""
    with tf.init_scope():  # eager, even while a tf.data function is being traced
        return tf.signal.linear_to_mel_weight_matrix(n_mels, bins, sample_rate, fmin, fmax).numpy()


def compute_features(wave: tf.Tensor, spec: FeatureSpec) -> tf.Tensor:
    """Waveforms `[..., samples]` -> features `[..., frames, bins]` as chosen by `spec.feature`.

    Works on a single clip or a batch; a batch is several times cheaper per clip.
    """
    if spec.feature == "waveform":
        return wave[..., tf.newaxis]
    stft = tf.signal.stft(wave, spec.frame_length, spec.frame_step, spec.fft_length)
    if spec.feature == "spectrogram":
        return tf.math.log(tf.abs(stft) + LOG_OFFSET)
    power = tf.square(tf.math.real(stft)) + tf.square(tf.math.imag(stft))  # |stft|^2 without a sqrt
    mel_matrix = _mel_matrix(spec.n_mels, spec.fft_length // 2 + 1, spec.sample_rate, spec.fmin, spec.fmax)
    log_mel = tf.math.log(tf.tensordot(power, mel_matrix, 1) + LOG_OFFSET)
    if spec.feature == "log_mel":
        return log_mel
    return tf.signal.mfccs_from_log_mel_spectrograms(log_mel)[..., : spec.n_mfcc]


def noise_bank(seed: int, frames: int, bins: int) -> tf.Tensor:
    """A fixed field of unit Gaussian noise `[frames, bins]` that augmentation samples windows from.

    Drawing fresh normals for every batch cost more than all the rest of the
    warm pipeline on 2 cores; a random window of a large fixed field is as good
    for augmentation and costs one gather.
    """
    return tf.constant(np.random.default_rng(seed).standard_normal([frames, bins]), tf.float32)


def _random_windows(seed: tf.Tensor, batch: tf.Tensor, low: int, high: int, length: int) -> tf.Tensor:
    """`[batch, length]` indices of windows starting uniformly in [low, high]."""
    starts = tf.random.stateless_uniform([batch], seed, low, high + 1, tf.int32)
    return starts[:, tf.newaxis] + tf.range(length)[tf.newaxis, :]


def augment_batch(
    features: tf.Tensor,
    seed: tf.Tensor,
    num_frames: int,
    max_shift_frames: int,
    noise: tf.Tensor,
    noise_stddev: float,
) -> tf.Tensor:
    """Train-time augmentation of a whole batch, reproducible from the stateless `seed` ([2]).

    `features` is `[batch, window, bins]`: each clip's features over a window
    `2 * margin` frames longer than the model's `num_frames`, centred on the
    clip. Each example gets a random crop of `num_frames` within
    `max_shift_frames` of the centre (a random crop of a longer clip, a time
    shift of a shorter one), then a random window of the `noise` bank scaled to
    `noise_stddev` times its own standard deviation, so one setting suits every
    feature type. Vectorised over the batch: per-example maps would cost more
    than the work itself.
    """
    crop_seed, noise_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
    batch = tf.shape(features)[0]
    margin = (features.shape[1] - num_frames) // 2
    shift = min(max_shift_frames, margin)
    windows = _random_windows(crop_seed, batch, margin - shift, margin + shift, num_frames)
    features = tf.gather(features, windows, batch_dims=1)
    if noise_stddev > 0:
        scale = noise_stddev * tf.math.reduce_std(features, axis=[1, 2], keepdims=True)
        noise_windows = _random_windows(noise_seed, batch, 0, noise.shape[0] - num_frames, num_frames)
        features += scale * tf.gather(noise, noise_windows)
    return features
