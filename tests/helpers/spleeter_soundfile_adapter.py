"""A soundfile-backed audio adapter for Spleeter, so its tests need no ffmpeg (tests/helpers/library_spleeter.py).

Spleeter lets a program choose its audio adapter by dotted name: ``-a spleeter_soundfile_adapter.SoundfileAudioAdapter``.
Only handles files already at the requested sample rate (the synthetic
data is written at 44.1 kHz); anything else raises.
"""

import os

import numpy as np
import soundfile as sf

from spleeter.audio.adapter import AudioAdapter


def _as_str(x):
    if isinstance(x, bytes):
        return x.decode("utf-8")
    if hasattr(x, "numpy"):  # eager tensor
        return _as_str(x.numpy())
    return str(x)


class SoundfileAudioAdapter(AudioAdapter):
    def load(self, audio_descriptor, offset=None, duration=None, sample_rate=None, dtype=b"float32"):
        path = _as_str(audio_descriptor)
        info = sf.info(path)
        rate = info.samplerate
        if sample_rate is not None and int(sample_rate) != rate:
            raise ValueError(f"{path}: sample rate {rate} != requested {sample_rate}")
        start = int(round(float(offset) * rate)) if offset else 0
        stop = None
        if duration is not None:
            stop = min(info.frames, start + int(round(float(duration) * rate)))
        data, _ = sf.read(path, start=start, stop=stop, dtype="float32", always_2d=True)
        if isinstance(dtype, bytes):
            dtype = dtype.decode()
        return data.astype(dtype), rate

    def save(self, path, data, sample_rate, codec=None, bitrate=None):
        path = str(path)
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        sf.write(path, np.asarray(data, dtype=np.float32), int(sample_rate), subtype="FLOAT")
