"""Decoding every supported format to the same waveform, and the features' shapes."""

import numpy as np
import pytest
import soundfile
import tensorflow as tf

from compat import audio
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


def test_canonical_pcm16_wav_takes_the_in_graph_path(tmp_path):
    pcm16 = str(tmp_path / "a.wav")
    soundfile.write(pcm16, tone(440), 16000, subtype="PCM_16")
    pcm24 = str(tmp_path / "b.wav")
    soundfile.write(pcm24, tone(440), 16000, subtype="PCM_24")
    assert bool(audio.is_canonical_pcm16_wav(tf.io.read_file(pcm16)))
    assert not bool(audio.is_canonical_pcm16_wav(tf.io.read_file(pcm24)))
    assert not bool(audio.is_canonical_pcm16_wav(tf.constant(b"RIFF")))


def test_files_whose_headers_all_pass_decode_in_graph_alone_to_the_same_waveforms(tmp_path):
    paths = []
    for index, (rate, subtype) in enumerate([(16000, "PCM_16"), (16000, "PCM_16"), (8000, "PCM_16"), (16000, "PCM_24")]):
        paths.append(str(tmp_path / f"{index}.wav"))
        soundfile.write(paths[-1], tone(440 + 100 * index, rate=rate), rate, subtype=subtype)
    canonical = paths[:2]
    assert audio.all_decode_in_graph(canonical, 16000)
    for path in canonical:  # the fast path gives what decode_audio's checked path gives
        np.testing.assert_array_equal(audio.decode_wav_file(tf.constant(path)).numpy(),
                                      audio.decode_audio(tf.constant(path), 16000)[0].numpy())
    assert not audio.all_decode_in_graph(canonical + [paths[2]], 16000)  # another rate: resampled by soundfile
    assert not audio.all_decode_in_graph(canonical + [paths[3]], 16000)  # 24-bit
    truncated = tmp_path / "truncated.wav"
    truncated.write_bytes(open(canonical[0], "rb").read()[:100])
    assert not audio.all_decode_in_graph(canonical + [str(truncated)], 16000)  # its data chunk does not fit
    empty = tmp_path / "empty.wav"
    soundfile.write(str(empty), np.zeros([0], np.float32), 16000, subtype="PCM_16")
    assert not audio.all_decode_in_graph(canonical + [str(empty)], 16000)  # decode_audio names it
    assert not audio.all_decode_in_graph(canonical + [str(tmp_path / "missing.wav")], 16000)


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
