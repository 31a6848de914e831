"""Spleeter 2.4.2's documented usage, `spleeter train` then `spleeter separate`, on a tiny musdb-like set of
synthetic stems (tones with vibrato as vocals, bass and pad tones with noise as the accompaniment, 44.1 kHz
stereo): one JSON line, the last on stdout.

Runs unchanged under TensorFlow 2.15 (tests/helpers/tf215_libraries.py records it there) and under this
project after `compat.estimator.install()` (tests/test_libraries.py). Spleeter reads audio through an adapter
chosen by its dotted name (`-a`): spleeter_soundfile_adapter.py reads with soundfile, so no ffmpeg is needed.
Written for these tests; it copies none of Spleeter's code. The JSON holds the final evaluation, the
checkpoint's variable names, the model folder's files, the separated stems with their SNR against the true
stems, and the signatures of an export of the trained Estimator (Spleeter itself exports nothing).

Usage: python library_spleeter.py --workdir DIR [--steps N] [--out FILE]
"""

import argparse
import csv
import glob
import json
import os
import re
import shutil
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)  # for the adapter, which Spleeter imports by its dotted name

ADAPTER = "spleeter_soundfile_adapter.SoundfileAudioAdapter"


import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402

SR = 44100


def _note_track(rng, seconds, f_lo, f_hi, note_len, harmonics, amp):
    n = int(seconds * SR)
    t = np.arange(n) / SR
    out = np.zeros(n, dtype=np.float64)
    step = int(note_len * SR)
    for s in range(0, n, step):
        e = min(n, s + step)
        f0 = rng.uniform(f_lo, f_hi)
        seg_t = t[s:e] - t[s]
        env = np.minimum(1.0, np.minimum(seg_t, seg_t[::-1]) * 40.0)  # 25 ms ramps
        vib = 1.0 + 0.01 * np.sin(2 * np.pi * 5.0 * seg_t)
        phase = 2 * np.pi * f0 * np.cumsum(vib) / SR
        seg = sum((0.6**k) * np.sin((k + 1) * phase) for k in range(harmonics))
        out[s:e] += env * seg
    return amp * out / (np.max(np.abs(out)) + 1e-9)


def make_track(seed, seconds):
    rng = np.random.RandomState(seed)
    voc = _note_track(rng, seconds, 300.0, 700.0, 0.25, 5, 0.35)
    bass = _note_track(rng, seconds, 60.0, 150.0, 0.5, 3, 0.25)
    pad = _note_track(rng, seconds, 150.0, 300.0, 1.0, 2, 0.15)
    noise = 0.03 * rng.randn(int(seconds * SR))
    acc = bass + pad + noise
    pan_v = rng.uniform(0.4, 0.6)
    vocals = np.stack([voc * pan_v, voc * (1 - pan_v)], axis=1) * 2
    acc_r = np.roll(acc, 37)  # slight stereo difference
    accompaniment = np.stack([acc, acc_r], axis=1)
    mixture = vocals + accompaniment
    return (mixture.astype(np.float32), vocals.astype(np.float32), accompaniment.astype(np.float32))


def generate(root, n_train=4, n_valid=2, seconds=5.0):
    os.makedirs(root, exist_ok=True)
    for split, count, base_seed in (("train", n_train, 100), ("validation", n_valid, 200)):
        rows = []
        for i in range(count):
            rel = os.path.join(split, f"track{i}")
            os.makedirs(os.path.join(root, rel), exist_ok=True)
            mix, voc, acc = make_track(base_seed + i, seconds)
            for name, data in (("mixture", mix), ("vocals", voc), ("accompaniment", acc)):
                sf.write(os.path.join(root, rel, f"{name}.wav"), data, SR, subtype="FLOAT")
            rows.append(
                {
                    "mix_path": f"{rel}/mixture.wav",
                    "vocals_path": f"{rel}/vocals.wav",
                    "accompaniment_path": f"{rel}/accompaniment.wav",
                    "duration": len(mix) / SR,
                }
            )
        with open(os.path.join(root, f"{split}.csv"), "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return os.path.join(root, "train.csv"), os.path.join(root, "validation.csv")


def failure(exc):
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    lines = "".join(tb).rstrip().splitlines()
    return {"type": type(exc).__name__, "message": str(exc)[:500], "traceback_tail": lines[-8:]}


def make_params(root, model_dir, steps, cache_dir):
    return {
        "train_csv": os.path.join(root, "train.csv"),
        "validation_csv": os.path.join(root, "validation.csv"),
        "model_dir": model_dir,
        "mix_name": "mix",
        "instrument_list": ["vocals", "accompaniment"],
        "sample_rate": 44100,
        "frame_length": 512,
        "frame_step": 256,
        "T": 64,
        "F": 128,
        "n_channels": 2,
        "separation_exponent": 2,
        "mask_extension": "zeros",
        "learning_rate": 1e-3,
        "batch_size": 4,
        "n_chunks_per_song": 2,
        "training_cache": os.path.join(cache_dir, "training"),
        "validation_cache": os.path.join(cache_dir, "validation"),
        "train_max_steps": steps,
        "throttle_secs": 5,
        "random_seed": 0,
        "save_checkpoints_steps": max(1, steps // 3),
        "save_summary_steps": 20,
        "model": {
            "type": "unet.unet",
            "params": {"conv_n_filters": [4, 8, 16, 32, 64, 128]},
        },
    }


def to_jsonable(v):
    try:
        import numpy as np

        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, np.ndarray):
            return v.tolist()
    except Exception:
        pass
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, float):
        return round(v, 6)
    return v


def list_files(model_dir):
    out = []
    for dirpath, _, files in os.walk(model_dir):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), model_dir)
            rel = re.sub(r"events\.out\.tfevents\..*", "events.out.tfevents.*", rel)
            out.append(rel)
    return sorted(out)


def read_event_scalars(pattern):
    """Last value for each scalar tag across matching event files."""
    import tensorflow as tf

    last = {}
    for path in sorted(glob.glob(pattern)):
        for ev in tf.compat.v1.train.summary_iterator(path):
            for val in ev.summary.value:
                if val.HasField("simple_value"):
                    x = float(val.simple_value)
                elif val.HasField("tensor"):
                    try:
                        arr = tf.make_ndarray(val.tensor)
                        if arr.size != 1 or arr.dtype.kind not in "fiu":
                            continue
                        x = float(arr.reshape(()))
                    except Exception:
                        continue
                else:
                    continue
                last[val.tag] = (ev.step, x)
    return {k: {"step": s, "value": round(v, 6)} for k, (s, v) in sorted(last.items())}


def snr_db(ref, est):
    import numpy as np

    n = min(len(ref), len(est))
    ref, est = ref[:n].astype("float64"), est[:n].astype("float64")
    return round(float(10 * np.log10(np.sum(ref**2) / (np.sum((ref - est) ** 2) + 1e-20))), 3)


def describe_saved_model(export_dir):
    from tensorflow.core.protobuf import saved_model_pb2

    sm = saved_model_pb2.SavedModel()
    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as fh:
        sm.ParseFromString(fh.read())
    sigs = {}
    for mg in sm.meta_graphs:
        for name, sd in mg.signature_def.items():
            sigs[name] = {
                "method": sd.method_name,
                "inputs": sorted(sd.inputs.keys()),
                "outputs": sorted(sd.outputs.keys()),
            }
    tags = sorted(t for mg in sm.meta_graphs for t in mg.meta_info_def.tags)
    return {"tags": tags, "signatures": dict(sorted(sigs.items()))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--out", default=None)
    ap.add_argument("--verbose", action="store_true", help="pass --verbose to spleeter")
    args = ap.parse_args()

    t_start = time.time()
    report = {"driver": "spleeter_driver/1", "steps_requested": args.steps}
    workdir = os.path.abspath(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    data_root = os.path.join(workdir, "data")
    model_dir = os.path.join(workdir, "model")
    params_path = os.path.join(workdir, "params.json")

    generate(data_root)
    params = make_params(data_root, model_dir, args.steps, os.path.join(workdir, "cache"))
    with open(params_path, "w") as fh:
        json.dump(params, fh, indent=2)

    timings = {}
    trained = False
    # ---- 1. `spleeter train -p params.json -d data -a sf_adapter...` in-process
    try:
        import tensorflow as tf
        import numpy as np

        report["versions"] = {
            "tensorflow": tf.__version__,
            "numpy": np.__version__,
            "estimator_module": getattr(getattr(tf, "estimator", None), "__name__", None),
        }
        try:
            import pandas

            report["versions"]["pandas"] = pandas.__version__
        except Exception as e:  # pragma: no cover
            report["versions"]["pandas"] = f"unavailable: {e}"

        # Record train_and_evaluate's return value (the final evaluation);
        # spleeter itself discards it. Pass-through otherwise.
        captured = {}
        estimator_ns = getattr(tf, "estimator", None)
        original_tae = getattr(estimator_ns, "train_and_evaluate", None)
        # TF 2.15's tf.estimator is a LazyLoader that swaps itself for the real
        # module on first use: look it up again so the patch lands on that module.
        estimator_ns = getattr(tf, "estimator", None)

        def recording_train_and_evaluate(*a, **kw):
            result = original_tae(*a, **kw)
            captured["result"] = result
            return result

        if original_tae is not None:
            estimator_ns.train_and_evaluate = recording_train_and_evaluate
        from spleeter.__main__ import spleeter as spleeter_cli

        t0 = time.time()
        try:
            cli_args = ["train", "-p", params_path, "-d", data_root, "-a", ADAPTER]
            if args.verbose:
                cli_args.append("--verbose")
            spleeter_cli(cli_args, standalone_mode=False)
        finally:
            if original_tae is not None:
                estimator_ns.train_and_evaluate = original_tae
            timings["train_s"] = round(time.time() - t0, 1)
        trained = True
        res = captured.get("result")
        eval_metrics = res[0] if isinstance(res, tuple) and res else res
        report["final_eval"] = (
            {k: to_jsonable(v) for k, v in sorted(eval_metrics.items())}
            if isinstance(eval_metrics, dict)
            else repr(eval_metrics)
        )
    except BaseException as e:  # SystemExit from click included
        report["train_error"] = failure(e)

    # ---- 2. inspect model_dir
    if os.path.isdir(model_dir):
        report["model_dir_files"] = list_files(model_dir)
        try:
            import numpy as np
            import tensorflow as tf

            ckpt = tf.train.latest_checkpoint(model_dir)
            report["latest_checkpoint"] = os.path.basename(ckpt) if ckpt else None
            if ckpt:
                variables = sorted(tf.train.list_variables(ckpt))
                report["checkpoint_variables"] = [n for n, _ in variables]
                report["checkpoint_variable_count"] = len(variables)
                report["checkpoint_total_elements"] = int(sum(int(np.prod(s)) if s else 1 for _, s in variables))
            report["eval_event_scalars"] = read_event_scalars(os.path.join(model_dir, "eval*", "events.out.tfevents.*"))
            train_scalars = read_event_scalars(os.path.join(model_dir, "events.out.tfevents.*"))
            report["train_event_tags"] = sorted(train_scalars)
            report["train_event_loss"] = train_scalars.get("loss")
        except BaseException as e:
            report["inspect_error"] = failure(e)

    # ---- 3. `spleeter separate` flow with the trained model
    if trained:
        try:
            import soundfile as sf
            from spleeter.audio import Codec
            from spleeter.audio.adapter import AudioAdapter
            from spleeter.separator import Separator

            adapter = AudioAdapter.get(ADAPTER)
            track = os.path.join(data_root, "validation", "track0")
            sep_out = os.path.join(workdir, "separated")
            t0 = time.time()
            separator = Separator(params_path, MWF=False, multiprocess=False)
            separator.separate_to_file(
                os.path.join(track, "mixture.wav"),
                sep_out,
                audio_adapter=adapter,
                codec=Codec.WAV,
                filename_format="{filename}/{instrument}.{codec}",
                synchronous=True,
            )
            timings["separate_s"] = round(time.time() - t0, 1)
            stems = sorted(os.listdir(os.path.join(sep_out, "mixture")))
            true_voc, _ = sf.read(os.path.join(track, "vocals.wav"), dtype="float32")
            true_acc, _ = sf.read(os.path.join(track, "accompaniment.wav"), dtype="float32")
            mix, _ = sf.read(os.path.join(track, "mixture.wav"), dtype="float32")
            est_voc, _ = sf.read(os.path.join(sep_out, "mixture", "vocals.wav"), dtype="float32")
            est_acc, _ = sf.read(os.path.join(sep_out, "mixture", "accompaniment.wav"), dtype="float32")
            report["separation"] = {
                "output_files": stems,
                "output_shape_vocals": list(est_voc.shape),
                "snr_db_vocals": snr_db(true_voc, est_voc),
                "snr_db_accompaniment": snr_db(true_acc, est_acc),
                "snr_db_mixture_as_vocals_baseline": snr_db(true_voc, mix),
                "snr_db_mixture_as_accompaniment_baseline": snr_db(true_acc, mix),
            }
        except BaseException as e:
            report["separate_error"] = failure(e)

        # ---- 4. extra (not a spleeter flow): export the trained estimator using
        # spleeter's own waveform placeholders as the serving input.
        # spleeter 2.4.2 itself has no export path (Separator predicts straight
        # from the checkpoint via Estimator.predict).
        try:
            import tensorflow as tf
            from spleeter.model import InputProviderFactory

            est = separator.estimator

            def serving_input_fn():
                feats = InputProviderFactory.get(separator._params).get_input_dict_placeholders()
                return tf.estimator.export.ServingInputReceiver(feats, feats)

            t0 = time.time()
            export_dir = est.export_saved_model(os.path.join(workdir, "export"), serving_input_fn)
            if isinstance(export_dir, bytes):
                export_dir = export_dir.decode()
            timings["export_s"] = round(time.time() - t0, 1)
            report["driver_extra_export"] = describe_saved_model(export_dir)
            report["driver_extra_export"]["files"] = list_files(export_dir)
        except BaseException as e:
            report["export_error"] = failure(e)

    timings["total_s"] = round(time.time() - t_start, 1)
    failed = [key for key in report if key.endswith("_error")]
    report["status"] = "error" if failed else "ok"
    if failed:
        report["error"] = "; ".join(f"{key}: {report[key]['message']}" for key in failed)
    report["timings"] = timings
    line = json.dumps(report, sort_keys=True)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(line + "\n")
    sys.stdout.flush()
    print(line, flush=True)


if __name__ == "__main__":
    main()
