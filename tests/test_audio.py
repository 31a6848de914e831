"""Decoding every supported format to the same waveform, and the features' shapes."""

import os
import re

import numpy as np
import pytest
import soundfile
import tensorflow as tf

from compat.data import audio
from compat.data import PipelineConfig
from conftest import tone

FORMATS = [  # (extension, soundfile subtype, tolerance against the float original)
    ("wav", "PCM_16", 1e-4),
    ("wav", "PCM_24", 1e-6),
    ("wav", "FLOAT", 1e-7),
    ("flac", "PCM_16", 1e-4),
    ("ogg", "VORBIS", None),  # lossy: compared by energy only
]


@pytest.mark.parametrize("ext,subtype,tolerance", FORMATS)
@pytest.mark.parametrize("channels", [1, 2])
def test_formats_decode_to_the_written_mono_waveform(tmp_path, ext, subtype, tolerance, channels):
    wave = tone(440, seconds=0.25, channels=channels)
    path = str(tmp_path / f"clip.{ext}")
    soundfile.write(path, wave, 16000, subtype=subtype)
    decoded, ok = audio.decode_audio(tf.constant(path), 16000)
    mono = wave if channels == 1 else wave.mean(axis=1)
    assert bool(ok) and decoded.dtype == tf.float32
    if tolerance is None:
        assert abs(decoded.shape[0] - mono.size) < 2000
        assert np.std(decoded.numpy()) == pytest.approx(np.std(mono), rel=0.1)
    else:
        np.testing.assert_allclose(decoded.numpy(), mono, atol=tolerance)


def _rewrite(path: str, offset: int, value: bytes, tail: bytes = b"") -> str:
    """A copy of the WAV at `path` with `value` written at `offset` and `tail` appended."""
    with open(path, "rb") as stream:
        contents = bytearray(stream.read())
    contents[offset : offset + len(value)] = value
    changed = f"{path}.{offset}.{len(tail)}.wav"
    with open(changed, "wb") as stream:
        stream.write(bytes(contents) + tail)
    return changed


def test_only_wavs_that_decode_wav_reads_without_error_take_the_in_graph_path(tmp_path):
    pcm16 = str(tmp_path / "a.wav")
    soundfile.write(pcm16, tone(440), 16000, subtype="PCM_16")
    stereo = str(tmp_path / "stereo.wav")
    soundfile.write(stereo, tone(440, channels=2), 16000, subtype="PCM_16")
    pcm24 = str(tmp_path / "b.wav")
    soundfile.write(pcm24, tone(440), 16000, subtype="PCM_24")
    empty = str(tmp_path / "empty.wav")
    soundfile.write(empty, np.zeros([0], np.float32), 16000, subtype="PCM_16")
    short = tmp_path / "short.wav"
    short.write_bytes(b"RIFF")
    read_by_soundfile = {"24-bit": pcm24, "8 kHz": _rewrite(pcm16, 24, (8000).to_bytes(4, "little"))}
    refused_by_decode_wav = {  # decode_wav fails on each, without naming it: soundfile must name it
        "a wrong byte rate": _rewrite(pcm16, 28, (1234).to_bytes(4, "little")),
        "a wrong block size": _rewrite(pcm16, 32, (4).to_bytes(2, "little")),
        "bytes after the data chunk": _rewrite(pcm16, 0, b"RIFF", tail=b"\0\0\0"),
        "a second data chunk": _rewrite(pcm16, 0, b"RIFF", tail=b"data\x02\0\0\0\0\0"),
        "a data chunk longer than the file": _rewrite(pcm16, 40, (10**6).to_bytes(4, "little")),
        "no samples": empty,
        "a header only": str(short),
    }
    for path in (pcm16, stereo):
        assert bool(audio.is_canonical_pcm16_wav(tf.io.read_file(path), 16000)) and audio.all_decode_in_graph([path], 16000)
        np.testing.assert_allclose(audio.decode_wav_file(tf.constant(path)).numpy(), tone(440), atol=1e-4)
    assert not audio.all_decode_in_graph([pcm16], 8000)
    for what, path in {**read_by_soundfile, **refused_by_decode_wav}.items():
        assert not bool(audio.is_canonical_pcm16_wav(tf.io.read_file(path), 16000)), what
        assert not audio.all_decode_in_graph([pcm16, path], 16000), what
    for what, path in refused_by_decode_wav.items():
        if what != "bytes after the data chunk":  # soundfile reads that one
            with pytest.raises(Exception, match=re.escape(os.path.basename(path))):
                audio.decode_audio(tf.constant(path), 16000)[0].numpy()
    assert not audio.all_decode_in_graph([pcm16, str(tmp_path / "missing.wav")], 16000)


def test_headers_are_checked_a_block_at_a_time_and_the_first_bad_file_is_named(tmp_path):
    """The header rule runs on blocks of files at once: a bad file anywhere, in any block, still counts,
    a named pipe is answered without waiting for a writer, and the error names the first bad file."""
    good = str(tmp_path / "a.wav")
    soundfile.write(good, tone(440), 16000, subtype="PCM_16")
    first_bad, second_bad = tmp_path / "first_bad.wav", tmp_path / "second_bad.wav"
    first_bad.write_bytes(b"this is no audio" * 10)
    second_bad.write_bytes(b"nor is this" * 10)
    pipe = str(tmp_path / "pipe.wav")
    os.mkfifo(pipe)
    many = [good] * 1500  # more than one block
    assert audio.all_decode_in_graph(many, 16000)
    assert not audio.all_decode_in_graph([*many[:1200], str(first_bad), *many[1200:]], 16000)
    assert not audio.all_decode_in_graph([*many, pipe], 16000)
    audio.check_headers([*many, pipe], 16000)  # a pipe is left to the decoder
    with pytest.raises(audio.BadAudioFileError, match="first_bad"):  # a bad file in each of two blocks
        audio.check_headers([*many[:500], str(first_bad), *many[500:1400], str(second_bad)], 16000)
    with pytest.raises(audio.BadAudioFileError, match="second_bad"):  # in the second block only
        audio.check_headers([*many[:1400], str(second_bad)], 16000)


@pytest.mark.parametrize("rate", [8000, 22050, 44100])
def test_other_sample_rates_are_resampled(tmp_path, rate):
    path = str(tmp_path / "clip.wav")
    soundfile.write(path, tone(440, seconds=0.5, rate=rate), rate, subtype="PCM_16")
    decoded, _ = audio.decode_audio(tf.constant(path), 16000)
    assert decoded.shape[0] == pytest.approx(8000, abs=2)
    spectrum = np.abs(np.fft.rfft(decoded.numpy()))
    assert np.argmax(spectrum) * 16000 / decoded.shape[0] == pytest.approx(440, abs=4)


@pytest.mark.parametrize("feature,bins", [("waveform", 1), ("spectrogram", 257), ("log_mel", 40), ("mfcc", 13)])
def test_feature_shapes_and_dtypes(feature, bins):
    spec = PipelineConfig(feature=feature).feature_spec
    features = audio.compute_features(tf.constant(tone(440, seconds=1.0), tf.float32), spec)
    assert features.dtype == tf.float32
    assert tuple(features.shape) == spec.shape == ((16000 if feature == "waveform" else 98), bins)
    assert np.isfinite(features.numpy()).all()
    batch = audio.compute_features(tf.stack([tf.constant(tone(440, 1.0), tf.float32)] * 3), spec)
    np.testing.assert_allclose(batch[1].numpy(), features.numpy(), rtol=1e-4, atol=1e-4)


def test_fit_waveform_centres_short_and_crops_long_clips():
    short = audio.fit_waveform(tf.ones([4]), 8).numpy()
    np.testing.assert_array_equal(short, [0, 0, 1, 1, 1, 1, 0, 0])
    long = audio.fit_waveform(tf.range(10, dtype=tf.float32), 4).numpy()
    np.testing.assert_array_equal(long, [3, 4, 5, 6])


def test_augment_batch_crops_within_the_shift_and_is_seeded():
    window = tf.tile(tf.range(20, dtype=tf.float32)[tf.newaxis, :, tf.newaxis], [8, 1, 2])  # margin 5
    noise = audio.noise_bank(0, 100, 2)
    crops = audio.augment_batch(window, tf.constant([1, 2]), 10, 3, noise, 0.0).numpy()
    starts = crops[:, 0, 0]
    assert crops.shape == (8, 10, 2) and set(starts) <= set(range(2, 9))
    np.testing.assert_array_equal(crops[:, :, 0] - starts[:, None], np.tile(np.arange(10), (8, 1)))
    again = audio.augment_batch(window, tf.constant([1, 2]), 10, 3, noise, 0.1).numpy()
    same = audio.augment_batch(window, tf.constant([1, 2]), 10, 3, noise, 0.1).numpy()
    other = audio.augment_batch(window, tf.constant([3, 4]), 10, 3, noise, 0.1).numpy()
    np.testing.assert_array_equal(again, same)
    assert not np.array_equal(again, other)
    assert 0 < np.abs(again - crops).max() < 5
