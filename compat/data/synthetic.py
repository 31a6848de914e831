"""The built-in default dataset: twelve classes of synthetic sounds, as real WAV files.

It lets the main job run on a fresh machine with no data and no download. Each
class is a kind of sound (tones of several timbres, chirps, noise bursts, click
trains...) drawn with a random pitch, length, position, gain and background
noise, so that a model must learn the kind rather than one waveform. The files
are generated once, deterministically from `VERSION` and the seed below, into
`<cache_dir>/synthetic-v<VERSION>/<class>/<class>_<n>.wav` (16-bit PCM, 16 kHz).
"""

from __future__ import annotations

import os
import wave
from collections.abc import Callable

import numpy as np
from absl import logging

from compat.core import atomic

# 2: fm_tone's frequency swing is 150-300 Hz; in version 1 it was 20-48 Hz, under the default
# features' frequency resolution (40 Hz at 25 ms), so an FM tone could not be told from a sine.
VERSION = 2
SAMPLE_RATE = 16000
CLIPS_PER_CLASS = 100
_SEED = 20261129


def _sine(t: np.ndarray, f: float) -> np.ndarray:
    return np.sin(2 * np.pi * f * t)


def _chirp(t: np.ndarray, f0: float, f1: float) -> np.ndarray:
    duration = max(t[-1], 1e-3)
    return np.sin(2 * np.pi * (f0 * t + (f1 - f0) * t**2 / (2 * duration)))


def _fm(t: np.ndarray, f: float, rate: float, swing: float) -> np.ndarray:
    """A tone whose frequency swings `swing` Hz either side of `f`, `rate` times a second."""
    return np.sin(2 * np.pi * f * t + swing / rate * _sine(t, rate))


def _band_noise(rng: np.random.Generator, n: int, low: float, high: float) -> np.ndarray:
    spectrum = np.fft.rfft(rng.standard_normal(n))
    freqs = np.fft.rfftfreq(n, 1 / SAMPLE_RATE)
    spectrum[(freqs < low) | (freqs > high)] = 0
    return np.fft.irfft(spectrum, n)


# Each maker: (rng, time axis in seconds, base pitch in Hz) -> signal.
_CLASSES: dict[str, Callable[[np.random.Generator, np.ndarray, float], np.ndarray]] = {
    "sine": lambda rng, t, f: _sine(t, f),
    "square": lambda rng, t, f: np.sign(_sine(t, f)),
    "sawtooth": lambda rng, t, f: 2 * ((t * f) % 1.0) - 1,
    "chord": lambda rng, t, f: _sine(t, f) + _sine(t, f * 1.26) + _sine(t, f * 1.5),
    "chirp_up": lambda rng, t, f: _chirp(t, f, f * 3),
    "chirp_down": lambda rng, t, f: _chirp(t, f * 3, f),
    "am_tone": lambda rng, t, f: _sine(t, f) * (0.5 + 0.5 * _sine(t, rng.uniform(4, 10))),
    "fm_tone": lambda rng, t, f: _fm(t, f, rng.uniform(5, 12), rng.uniform(150, 300)),
    "pluck": lambda rng, t, f: _sine(t, f) * np.exp(-t * rng.uniform(8, 20)),
    "click_train": lambda rng, t, f: ((t * rng.uniform(15, 40)) % 1.0 < 0.03).astype(float),
    "noise_low": lambda rng, t, f: _band_noise(rng, t.size, 100, 1000),
    "noise_high": lambda rng, t, f: _band_noise(rng, t.size, 3000, 7000),
}
CLASS_NAMES = tuple(sorted(_CLASSES))


def make_clip(rng: np.random.Generator, kind: str) -> np.ndarray:
    """One clip of `kind`: 0.3-1.0 s of sound placed at random in up to 1 s, int16."""
    length = int(SAMPLE_RATE * rng.uniform(0.3, 1.0))
    t = np.arange(length) / SAMPLE_RATE
    sound = _CLASSES[kind](rng, t, rng.uniform(200, 1000))
    sound = sound / max(np.abs(sound).max(), 1e-6)
    fade = np.minimum(1.0, np.minimum(t, t[::-1]) / 0.01)  # no click at the edges
    total = int(SAMPLE_RATE * rng.uniform(max(0.3, length / SAMPLE_RATE), 1.0))
    clip = np.zeros(max(total, length))
    start = rng.integers(0, clip.size - length + 1)
    clip[start : start + length] = sound * fade * rng.uniform(0.1, 0.9)
    clip += rng.normal(0, rng.uniform(0.002, 0.03), clip.size)
    return (np.clip(clip, -1, 1) * 32767).astype(np.int16)


def write_dataset(folder: str, clips_per_class: int = CLIPS_PER_CLASS) -> None:
    """Writes every class's clips into `folder`, the same bytes on every machine."""
    rng = np.random.default_rng(_SEED)
    for kind in CLASS_NAMES:
        os.makedirs(os.path.join(folder, kind))
        for n in range(clips_per_class):
            # the standard library's writer: the bytes soundfile writes for 16-bit PCM, five times as fast
            with wave.open(os.path.join(folder, kind, f"{kind}_{n:04d}.wav"), "wb") as stream:
                stream.setnchannels(1)
                stream.setsampwidth(2)
                stream.setframerate(SAMPLE_RATE)
                stream.writeframes(make_clip(rng, kind).astype("<i2").tobytes())  # WAV is little-endian


def ensure_dataset(cache_dir: str) -> str:
    """The dataset's folder, generated (atomically) on first use."""
    final = os.path.join(cache_dir, f"synthetic-v{VERSION}")
    if not os.path.isdir(final):
        logging.info("Generating the built-in synthetic dataset into %s (once; later runs reuse it)", final)
    return atomic.publish_folder(final, write_dataset)
