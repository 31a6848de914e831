"""The plain input_fn, shared by bench/pipeline.py and bench/overlap.py."""

from __future__ import annotations


def plain_dataset(paths, labels, config, parallel: bool, batch: int):
    """The plain input_fn, with the builder's decode and features: `batch`-sized batches.

    parallel=False is the question as asked (sequential maps, no prefetch, tf.data's
    autotune and automatic optimisations off); parallel=True is the usual answer
    (parallel maps, prefetch(1) at the end).
    """
    import tensorflow as tf

    from compat.data import audio
    from compat.data import window_samples

    spec = config.feature_spec
    calls = tf.data.AUTOTUNE if parallel else None
    window = window_samples(config, training=True)  # the builder's training features
    in_graph_only = audio.all_decode_in_graph(list(paths), spec.sample_rate)  # as the builder decodes them

    def decode(path, label):
        wave = audio.decode_wav_file(path) if in_graph_only else audio.decode_audio(path, spec.sample_rate)[0]
        return audio.fit_waveform(wave, window), label

    def postprocess(wave, label):
        return {"audio": audio.compute_features(wave, spec)}, label

    dataset = tf.data.Dataset.from_tensor_slices((list(paths), list(labels)))
    dataset = dataset.map(decode, num_parallel_calls=calls).shuffle(1000, seed=0)
    dataset = dataset.map(postprocess, num_parallel_calls=calls).batch(batch)
    if parallel:
        return dataset.prefetch(1)
    options = tf.data.Options()
    options.autotune.enabled = False
    options.experimental_optimization.map_parallelization = False
    options.experimental_optimization.inject_prefetch = False
    return dataset.with_options(options)
