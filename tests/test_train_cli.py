"""train.py --mode=keras|estimator: once each through the real CLI, the rest in-process."""

import glob
import json
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO, run_train, start_paused, train_in_process, write_class_folders

TINY = ["--clip_seconds=0.5", "--batch_size=8", "--model=cnn", "--width=4", "--depth=1",
        "--crop_margin_ms=50", "--time_shift_ms=50"]


def _common(tiny_data, tmp_path):
    return ["--dataset=folder", f"--data_dir={tiny_data}", f"--cache_dir={tmp_path / 'cache'}", *TINY]


def _train_files(tiny_data, tmp_path, split: str = "train") -> int:
    from compat.data import PipelineConfig, split_size

    return split_size(f"{tiny_data}", PipelineConfig(cache_dir=str(tmp_path / "cache")), split)


def _assert_quiet_start(stderr: str) -> None:
    """TensorFlow's load-time C++ lines are held back; without a GPU, "failed call to cuInit" is left alone."""
    assert "absl::InitializeLog" not in stderr and "oneDNN custom operations" not in stderr
    assert sum("cuInit" in line for line in stderr.splitlines()) <= 1


def test_a_short_run_writes_every_output(tiny_data, tmp_path):
    model_dir = tmp_path / "run"
    secret = "sekrit-" + os.urandom(4).hex()
    result = run_train(*_common(tiny_data, tmp_path), "--epochs=2", f"--model_dir={model_dir}",
                       env={**os.environ, "AWS_SECRET_ACCESS_KEY": secret, "PYTHONPROFILEIMPORTTIME": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "test accuracy" in result.stdout
    # --mode=keras loads neither the Estimator package nor tf_keras: about 1 s of CPU at every start.
    imported = {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert "tensorflow" in imported and not {"compat.estimator", "tf_keras"} & imported
    _assert_quiet_start(result.stderr)
    _assert_nothing_private([model_dir / "model.keras", model_dir / "saved_model"],
                            [secret, str(tmp_path), os.path.expanduser("~") + os.sep, REPO])
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert {"test_accuracy", "test_loss", "steps", "wall_seconds", "examples_per_second"} <= set(metrics)
    assert metrics["steps"] == 2 * -(-_train_files(tiny_data, tmp_path) // 8)
    assert glob.glob(str(model_dir / "checkpoints" / "ckpt-*.index"))
    assert glob.glob(str(model_dir / "logs" / "train" / "events.out.tfevents.*"))
    assert glob.glob(str(model_dir / "logs" / "eval" / "events.out.tfevents.*"))
    # flags.txt holds what the user set, nothing else: a search started from it keeps its space open.
    given = [*_common(tiny_data, tmp_path), "--epochs=2", f"--model_dir={model_dir}"]
    assert sorted(line.split("=")[0] for line in (model_dir / "flags.txt").read_text().split()) == sorted(
        flag.split("=")[0] for flag in given)
    history = (model_dir / "history.csv").read_text().splitlines()
    assert history[0].startswith("epoch,") and len(history) == 3  # a header and one row per period
    assert (model_dir / "confusion_matrix.png").read_bytes().startswith(b"\x89PNG")
    assert set(metrics["per_class_accuracy"]) == set(metrics["class_names"])
    assert sum(map(sum, metrics["confusion_matrix"])) == _train_files(tiny_data, tmp_path, "test")  # each clip once
    assert (model_dir / "model.keras").is_file()
    assert not [name for name in os.listdir(model_dir) if name.startswith(".")]  # no lock, no temporaries

    # The SavedModel, loaded on its own, answers like the .keras model on the same inputs.
    import keras
    import tensorflow as tf

    inputs = np.random.default_rng(0).standard_normal((3, 48, 40)).astype("float32")
    expected = keras.models.load_model(model_dir / "model.keras")({"audio": inputs})
    served = tf.saved_model.load(str(model_dir / "saved_model"))
    np.testing.assert_allclose(served.serve({"audio": inputs}).numpy(), np.asarray(expected), atol=1e-5)


def _assert_nothing_private(exports: list, private: list[str]) -> None:
    """No environment variable and no path of this machine in what a run exports (the .keras zip's
    members read unpacked); flags.txt holds only the user's own flags, which may name their paths."""
    import zipfile

    exported = [file for path in exports for file in ([path] if path.is_file() else path.rglob("*")) if file.is_file()]
    assert exported
    for path in exported:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                contents = [archive.read(name) for name in archive.namelist()]
        else:
            contents = [path.read_bytes()]
        for text in private:
            assert not any(text.encode() in blob for blob in contents), f"{text} in {path}"


def test_estimator_mode_writes_the_same_metrics_and_estimator_files(tiny_data, tmp_path):
    model_dir = tmp_path / "run"
    secret = "sekrit-" + os.urandom(4).hex()
    result = run_train(*_common(tiny_data, tmp_path), "--mode=estimator", "--epochs=2", f"--model_dir={model_dir}",
                       env={**os.environ, "AWS_SECRET_ACCESS_KEY": secret})
    assert result.returncode == 0, result.stderr[-3000:]
    _assert_quiet_start(result.stderr)
    _assert_nothing_private([model_dir / "export"], [secret, str(tmp_path), os.path.expanduser("~") + os.sep, REPO])
    assert "test accuracy" in result.stdout
    # As quiet as keras mode: each evaluation's results, not TF 2.15's lines for every hook and graph.
    assert "Saving dict for global step" in result.stderr
    # each results line says which split it is
    results = [line for line in result.stderr.splitlines() if "Saving dict for global step" in line]
    assert [line for line in results if "eval split: Saving dict" in line]
    assert len([line for line in results if "test split: Saving dict" in line]) == 1
    assert all("eval split: " in line or "test split: " in line for line in results)
    noisy = ("Calling model_fn", "Graph was finalized", "Using config", "Create CheckpointSaverHook", ", step = ")
    assert [line for line in noisy if line in result.stderr] == []
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert {"test_accuracy", "test_loss", "steps", "wall_seconds", "examples_per_second"} <= set(metrics)
    steps = metrics["steps"]
    assert steps == 2 * -(-_train_files(tiny_data, tmp_path) // 8)
    assert glob.glob(str(model_dir / f"model.ckpt-{steps}.index")) and (model_dir / "checkpoint").is_file()
    assert glob.glob(str(model_dir / "eval" / "events.out.tfevents.*"))
    assert len(os.listdir(model_dir / "export" / "final")) == 1
    history = (model_dir / "history.csv").read_text().splitlines()
    assert history[0].startswith("step,") and len(history) == 3  # one row per evaluation
    assert (model_dir / "confusion_matrix.png").read_bytes().startswith(b"\x89PNG")
    assert set(metrics["per_class_accuracy"]) == set(metrics["class_names"])


@pytest.mark.parametrize("mode", ["keras", "estimator"])
def test_max_steps_is_exact_with_a_shorter_last_period(tiny_data, tmp_path, mode):
    """--max_steps=10 validated every 4 steps trains 10 steps (as TF 2.15's max_steps), evaluating and saving
    at 4, 8 and 10."""
    model_dir = tmp_path / mode
    result = train_in_process(*_common(tiny_data, tmp_path), f"--mode={mode}", "--max_steps=10",
                              "--eval_every_steps=4", "--noexport", f"--model_dir={model_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((model_dir / "metrics.json").read_text())["steps"] == 10
    history = (model_dir / "history.csv").read_text().splitlines()
    assert len(history) == 4  # a header, then the evaluations after steps 4, 8 and 10
    if mode == "keras":
        import tensorflow as tf

        saved = tf.train.get_checkpoint_state(str(model_dir / "checkpoints")).all_model_checkpoint_paths
        assert [int(path.rsplit("-", 1)[1]) for path in saved][-1] == 10
    else:
        assert (model_dir / "model.ckpt-10.index").is_file() and not glob.glob(str(model_dir / "model.ckpt-12.*"))
    assert "rounded up" not in result.stderr


def test_each_mode_has_its_own_default_folder_and_refuses_another_modes(tiny_data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default folders are below the working folder
    keras_run = train_in_process(*_common(tiny_data, tmp_path), "--max_steps=4", "--noexport")
    assert keras_run.returncode == 0, keras_run.stderr[-3000:]
    assert (tmp_path / "runs" / "keras" / "metrics.json").is_file()
    refused = train_in_process(*_common(tiny_data, tmp_path), "--mode=estimator", "--max_steps=4",
                               f"--model_dir={tmp_path / 'runs' / 'keras'}")
    assert refused.returncode == 2
    assert "holds a --mode=keras run; give this --mode=estimator run a folder of its own" in refused.stderr
    assert "Traceback" not in refused.stderr


def _scalar_and_image_tags(folder) -> tuple[set, set]:
    """The scalar and image tags of a TensorBoard run folder, read with TensorBoard's own reader: TF2 summaries
    (tensors of the scalars and images plugins) and TF 1.x scalars (simple values, as TF 2.15's Estimator wrote
    its evaluations), which TensorBoard shows alike."""
    from tensorboard.backend.event_processing import event_accumulator

    reader = event_accumulator.EventAccumulator(str(folder), size_guidance={event_accumulator.TENSORS: 0})
    reader.Reload()
    by_plugin = {"scalars": set(reader.Tags()["scalars"])}
    for tag in reader.Tags()["tensors"]:
        metadata = reader.summary_metadata.get(tag)  # none: TF 2.15's checkpoint_path string tensor
        plugin = metadata.plugin_data.plugin_name if metadata is not None else None
        by_plugin.setdefault(plugin, set()).add(tag)
    return by_plugin.get("scalars", set()), by_plugin.get("images", set())


def test_both_modes_write_the_same_tensorboard_tags_and_export_the_best_model(tiny_data, tmp_path):
    runs = {}
    for mode in ("keras", "estimator"):
        result = train_in_process(*_common(tiny_data, tmp_path), f"--mode={mode}", "--max_steps=12",
                                  "--eval_every_steps=3", "--log_every_steps=2", f"--model_dir={tmp_path / mode}")
        assert result.returncode == 0, result.stderr[-3000:]
        runs[mode] = json.loads((tmp_path / mode / "metrics.json").read_text())
    keras_train, _ = _scalar_and_image_tags(tmp_path / "keras" / "logs" / "train")
    estimator_train, _ = _scalar_and_image_tags(tmp_path / "estimator")
    assert keras_train == estimator_train == {"loss", "accuracy", "learning_rate", "global_step/sec",
                                              "examples_per_second"}
    assert _scalar_and_image_tags(tmp_path / "keras" / "logs" / "eval")[0] == \
        _scalar_and_image_tags(tmp_path / "estimator" / "eval")[0] == {"loss", "accuracy"}
    # On one step axis, every --log_every_steps steps: exactly in the Estimator's loop; in Keras mode at the
    # first compiled call (of steps_per_execution = 3 steps here, the period) that reaches each multiple of 2.
    from compat.estimator.early_stopping import eval_results_in

    def logged_steps(folder) -> list:
        return sorted(eval_results_in(glob.glob(str(folder / "events.out.tfevents.*"))))

    assert logged_steps(tmp_path / "estimator") == [2, 4, 6, 8, 10, 12]
    assert logged_steps(tmp_path / "keras" / "logs" / "train") == [3, 6, 9, 12]
    for folder in (tmp_path / "keras" / "logs" / "examples", tmp_path / "estimator" / "examples"):
        images = _scalar_and_image_tags(folder)[1]
        # the eval split is listed class by class: its pictures show each class, not the first six clips
        assert {tag.rsplit("_", 1)[1] for tag in images} == {"high", "low", "mid"}, images

    # The best period (lowest validation loss) beside the last: scored, exported, and it serves.
    best = runs["keras"]["best"]
    assert best["step"] in (3, 6, 9, 12) and 0 <= best["test_accuracy"] <= 1
    history = (tmp_path / "keras" / "history.csv").read_text().splitlines()
    losses = [float(row.split(",")[history[0].split(",").index("val_loss")]) for row in history[1:]]
    assert best["val_loss"] == pytest.approx(min(losses))
    import tensorflow as tf

    assert tf.saved_model.load(str(tmp_path / "keras" / "best" / "saved_model")).serve is not None
    assert (tmp_path / "keras" / "best" / "model.keras").is_file()
    assert runs["estimator"]["best"]["step"] in (3, 6, 9, 12)
    assert len(os.listdir(tmp_path / "estimator" / "export" / "best")) == 1


def test_an_earlier_best_period_is_evaluated_and_exported_with_its_own_weights(tiny_data, tmp_path):
    """A best period before the last (here from the first process: its score is made unbeatable before
    the run resumes) is evaluated and exported with the weights saved then, not the last period's."""
    import keras
    import tensorflow as tf

    model_dir = tmp_path / "run"
    common = [*_common(tiny_data, tmp_path), "--max_steps=6", "--eval_every_steps=3", f"--model_dir={model_dir}"]
    assert train_in_process(*common, "--max_steps=3", "--noexport").returncode == 0
    score = model_dir / "best" / "weights" / "score.json"
    score.write_text(json.dumps({**json.loads(score.read_text()), "val_loss": -1.0}))
    result = train_in_process(*common)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert metrics["steps"] == 6 and metrics["best"]["step"] == 3 and 0 <= metrics["best"]["test_accuracy"] <= 1

    def weights(path) -> list:
        return [np.array(w) for w in keras.saving.load_model(path).weights]

    best, last = weights(model_dir / "best" / "model.keras"), weights(model_dir / "model.keras")
    assert any(not np.array_equal(b, l) for b, l in zip(best, last, strict=True))  # six steps moved them
    exported = keras.saving.load_model(model_dir / "best" / "model.keras")
    tf.train.Checkpoint(model=exported).read(str(model_dir / "best" / "weights" / "weights")).expect_partial(
        ).assert_existing_objects_matched()
    for exported_weight, saved in zip(best, exported.weights, strict=True):  # best/ exports what best/weights holds
        np.testing.assert_array_equal(exported_weight, np.array(saved))
    served = tf.saved_model.load(str(model_dir / "best" / "saved_model"))
    inputs = np.random.default_rng(0).standard_normal((2, 48, 40)).astype("float32")
    np.testing.assert_allclose(served.serve({"audio": inputs}).numpy(),
                               np.asarray(exported({"audio": inputs})), atol=1e-5)


def test_when_the_last_period_is_the_best_its_exports_are_the_best_exports(tiny_data, tmp_path):
    """One period: the best is the last, so best/ gets the last period's exports, copied whole, and its score."""
    model_dir = tmp_path / "run"
    result = train_in_process(*_common(tiny_data, tmp_path), "--max_steps=3", "--eval_every_steps=3",
                              f"--model_dir={model_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert metrics["best"]["step"] == metrics["steps"] == 3
    assert metrics["best"]["test_accuracy"] == metrics["test_accuracy"]
    last = sorted(p.relative_to(model_dir) for p in (model_dir / "saved_model").rglob("*") if p.is_file())
    best = sorted(p.relative_to(model_dir / "best") for p in (model_dir / "best" / "saved_model").rglob("*")
                  if p.is_file())
    assert last == best and (model_dir / "saved_model" / "saved_model.pb") in [model_dir / p for p in last]
    for name in [*last, "model.keras"]:
        assert (model_dir / "best" / name).read_bytes() == (model_dir / name).read_bytes(), name


def test_gpu_switches_train_on_the_cpu_where_they_apply(tiny_data, tmp_path):
    """Each switch is in effect in the model that trained (metrics.json's `compute`, read from the model)."""
    expected = {"dtype": {"dtype_policy": "mixed_bfloat16", "jit_compile": False},
                "enable_xla": {"dtype_policy": "float32", "jit_compile": True},
                "profile_steps": {"dtype_policy": "float32", "jit_compile": False}}
    for switches in (("--dtype=mixed_bfloat16",), ("--enable_xla",), ("--profile_steps=2,3",)):
        name = switches[0].split("=")[0].strip("-")
        model_dir = tmp_path / name
        result = train_in_process(*_common(tiny_data, tmp_path), "--epochs=2", "--noexport", *switches,
                                  f"--model_dir={model_dir}")
        assert result.returncode == 0, (switches, result.stderr[-3000:])
        metrics = json.loads((model_dir / "metrics.json").read_text())
        assert metrics["steps"] > 0 and metrics["compute"] == expected[name], (switches, metrics.get("compute"))
    profiles = glob.glob(str(tmp_path / "profile_steps" / "logs" / "train" / "plugins" / "profile" / "*" / "*.xplane.pb"))
    assert profiles, "no TensorBoard profile was written"


def test_ctrl_c_says_where_the_run_stopped_and_exits_130(tiny_data, tmp_path):
    model_dir = tmp_path / "run"
    process = start_paused("checkpoint:12", os.path.join(REPO, "train.py"), *_common(tiny_data, tmp_path),
                           "--max_steps=60", "--eval_every_steps=6", "--noexport", f"--model_dir={model_dir}",
                           stderr_to=tmp_path / "stderr.txt")
    process.send_signal(signal.SIGINT)  # held just after its checkpoint at step 12 was written
    process.wait(timeout=120)
    err = (tmp_path / "stderr.txt").read_text()
    assert process.returncode == 130, err[-3000:]
    assert "interrupted" in err and "its last checkpoint is at step 12" in err and "The same command resumes" in err


def test_flagfile_round_trip_and_later_flags_override(tiny_data, tmp_path):
    first = tmp_path / "first"
    result = train_in_process(*_common(tiny_data, tmp_path), "--epochs=1", "--noexport", f"--model_dir={first}")
    assert result.returncode == 0, result.stderr[-3000:]
    second = tmp_path / "second"
    result = train_in_process(f"--flagfile={first / 'flags.txt'}", f"--model_dir={second}", "--epochs=2")
    assert result.returncode == 0, result.stderr[-3000:]
    saved = (second / "flags.txt").read_text().splitlines()
    assert "--epochs=2" in saved and "--noexport" in saved and f"--data_dir={tiny_data}" in saved
    assert json.loads((second / "metrics.json").read_text())["steps"] == 2 * json.loads(
        (first / "metrics.json").read_text())["steps"]


@pytest.mark.parametrize("mode", ["keras", "estimator"])
def test_kill_9_then_the_same_command_resumes(tiny_data, tmp_path, mode):
    model_dir = tmp_path / "run"
    flags = [*_common(tiny_data, tmp_path), f"--mode={mode}", "--max_steps=60", "--eval_every_steps=6",
             "--noexport", f"--model_dir={model_dir}"]
    process = start_paused("checkpoint:12", os.path.join(REPO, "train.py"), *flags)
    process.send_signal(signal.SIGKILL)  # held just after its checkpoint at step 12 was written
    process.wait()
    assert not (model_dir / "metrics.json").exists()
    result = train_in_process(*flags)  # the same command again (its main(), in this process)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert metrics["steps"] == 60 and metrics["resumed_from_step"] == 12
    checkpoints = "checkpoints/ckpt-*.index" if mode == "keras" else "model.ckpt-*.index"
    assert len(glob.glob(str(model_dir / checkpoints))) == 3  # --keep_checkpoints
    assert not [name for name in os.listdir(model_dir) if name.startswith(".tmp-") or name.endswith(".lock")]


def test_an_invalid_flag_value_names_the_flag(tmp_path, monkeypatch):
    for flags, name in [(("--batch_size=0",), "batch_size"), (("--feature=mel",), "feature"),
                        (("--cache=ram",), "cache"), (("--time_shift_ms=500",), "time_shift_ms"),
                        (("--seed=-5",), "seed"), (("--frame_step_ms=30",), "frame_step_ms"),
                        (("--n_mfcc=50",), "n_mfcc"), (("--profile_steps=5",), "profile_steps"),
                        (("--mode=estimator", "--enable_xla"), "--enable_xla"),
                        (("--dtype=float16",), "dtype")]:
        result = train_in_process(*flags, f"--model_dir={tmp_path / 'x'}")
        assert result.returncode == 2
        assert name in result.stderr, result.stderr[-2000:]
        assert len(result.stderr.strip().splitlines()) <= 2, result.stderr  # the message, not the help
    assert not (tmp_path / "x").exists()  # refused before anything was written
    (tmp_path / "a-file").write_text("")
    result = train_in_process(f"--model_dir={tmp_path / 'a-file'}")
    assert result.returncode == 2 and "not an existing file (or a folder inside one)" in result.stderr
    monkeypatch.chdir(tmp_path)  # where a look-alike folder "s3:" would appear
    result = train_in_process("--model_dir=s3://bucket/run")  # a file system this TensorFlow does not have
    assert result.returncode == 2 and "this TensorFlow has no s3:// file system" in result.stderr
    assert not (tmp_path / "s3:").exists()
    result = train_in_process("--mode=tune", "--model_dir=ram://search")
    assert result.returncode == 2 and "--mode=tune needs a local --model_dir" in result.stderr


def test_a_model_folder_on_tensorflows_file_systems(tiny_data, tmp_path, monkeypatch):
    """ram://, TensorFlow's in-memory file system, stands for gs:// and the others: everything the run
    writes goes through tf.io.gfile, and nothing lands in a local look-alike folder."""
    import tensorflow as tf

    monkeypatch.chdir(tmp_path)
    for mode, expected in (("keras", ["checkpoints", "logs/train", "logs/eval", "saved_model/saved_model.pb",
                                      "model.keras", "best/saved_model/saved_model.pb", "history.csv"]),
                           ("estimator", ["checkpoint", "eval", "export/final", "export/best", "history.csv"])):
        model_dir = f"ram://runs/{mode}"
        common = [*_common(tiny_data, tmp_path), f"--mode={mode}", "--max_steps=6", "--eval_every_steps=3",
                  "--log_every_steps=3", f"--model_dir={model_dir}"]
        result = train_in_process(*common, "--max_steps=3", "--noexport")  # the resumed run exports
        assert result.returncode == 0, result.stderr[-3000:]
        result = train_in_process(*common)  # resumes from the checkpoint in ram://
        assert result.returncode == 0, result.stderr[-3000:]
        with tf.io.gfile.GFile(f"{model_dir}/metrics.json") as stream:
            metrics = json.load(stream)
        assert metrics["steps"] == 6 and metrics["resumed_from_step"] == 3
        for name in [*expected, "flags.txt", "confusion_matrix.png"]:
            assert tf.io.gfile.exists(f"{model_dir}/{name}"), f"{model_dir}/{name}"
        with tf.io.gfile.GFile(f"{model_dir}/flags.txt") as stream:
            assert f"--model_dir={model_dir}" in stream.read()
    served = tf.saved_model.load("ram://runs/keras/saved_model")
    assert served.serve({"audio": tf.zeros([1, 48, 40])}).shape == (1, 3)
    assert not [name for name in os.listdir(tmp_path) if name.startswith("ram")]  # no local look-alike


def test_missing_or_empty_data_dir_is_a_clear_error(tmp_path):
    result = train_in_process("--dataset=folder", f"--model_dir={tmp_path / 'x'}")
    assert result.returncode == 2 and "--dataset=folder needs --data_dir" in result.stderr
    # A data folder without --dataset would have trained on the synthetic set: refused instead.
    result = train_in_process(f"--data_dir={tmp_path}", f"--model_dir={tmp_path / 'x'}")
    assert result.returncode == 2 and "add --dataset=folder|fsdd|manifest" in result.stderr
    result = train_in_process("--dataset=folder", f"--data_dir={tmp_path / 'nowhere'}",
                              f"--model_dir={tmp_path / 'x'}")
    assert result.returncode == 2 and "does not exist" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1  # one line, no traceback
    (tmp_path / "empty").mkdir()
    result = train_in_process("--dataset=folder", f"--data_dir={tmp_path / 'empty'}", f"--model_dir={tmp_path / 'x'}")
    assert result.returncode == 2 and "no audio files in" in result.stderr


def test_a_diverging_run_stops_with_a_clear_error(tiny_data, tmp_path):
    result = train_in_process(*_common(tiny_data, tmp_path), "--learning_rate=1e30", "--max_steps=30",
                              "--eval_every_steps=3", "--noexport", f"--model_dir={tmp_path / 'run'}")
    assert result.returncode == 1
    assert "the loss became NaN or infinite" in result.stderr, result.stderr[-2000:]
    assert not (tmp_path / "run" / "metrics.json").exists()


def test_a_second_run_on_the_same_model_dir_is_refused(tiny_data, tmp_path):
    from compat.core import atomic

    model_dir = tmp_path / "run"
    with atomic.folder_lock(str(model_dir)):  # as a live run holds it
        result = train_in_process(*_common(tiny_data, tmp_path), "--epochs=1", f"--model_dir={model_dir}")
    assert result.returncode == 2
    assert f"is in use by process {os.getpid()}" in result.stderr and "--model_dir" in result.stderr


def test_a_truncated_latest_checkpoint_falls_back_to_the_previous_one(tiny_data, tmp_path, caplog):
    for mode, pattern in (("keras", "checkpoints/ckpt-{}.data-*"), ("estimator", "model.ckpt-{}.data-*")):
        model_dir = tmp_path / mode
        common = [*_common(tiny_data, tmp_path), f"--mode={mode}", "--eval_every_steps=3", "--noexport",
                  f"--model_dir={model_dir}"]
        assert train_in_process(*common, "--max_steps=6").returncode == 0
        (newest,) = glob.glob(str(model_dir / pattern.format(6)))
        os.truncate(newest, os.path.getsize(newest) // 2)
        caplog.clear()
        with caplog.at_level("WARNING"):
            result = train_in_process(*common, "--max_steps=9")
        assert result.returncode == 0, result.stderr[-3000:]
        assert "cannot be read" in caplog.text and "-6" in caplog.text and "-3" in caplog.text, caplog.text
        metrics = json.loads((model_dir / "metrics.json").read_text())
        assert metrics["steps"] == 9, (mode, metrics)




def test_the_library_speaks_of_settings_and_train_py_of_flags():
    import ast

    import train

    for path in glob.glob(os.path.join(REPO, "compat", "**", "*.py"), recursive=True):
        source = open(path).read()
        if "flags.DEFINE_" in source:  # a command of its own (python -m compat.data.service): its flags are its words
            continue
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and node.exc is not None:
                for constant in ast.walk(node.exc):
                    if isinstance(constant, ast.Constant) and isinstance(constant.value, str):
                        assert not re.search(r"(^|[\s(])--[a-z]", constant.value), (path, constant.value)
    assert train.in_flag_terms("set `cache_dir` to a folder, or `cache=none`; `nonsense` stays") == \
        "set --cache_dir to a folder, or --cache=none; `nonsense` stays"


def test_a_bad_flag_on_the_command_line_exits_2_with_one_line(tmp_path):
    result = subprocess.run([sys.executable, os.path.join(REPO, "train.py"), "--batch_size=0",
                             f"--model_dir={tmp_path / 'x'}"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "train.py: error: flag --batch_size=0: 0 is not a positive integer "
        "(python train.py --help lists every flag with its range)"]
    assert not (tmp_path / "x").exists()


def test_a_class_without_test_clips_is_logged_and_its_accuracy_is_null(tmp_path, caplog):
    import logging

    data_dir = write_class_folders(tmp_path / "data", classes=("high", "low"), per_class=10)
    write_class_folders(tmp_path / "data", classes=("rare",), per_class=2)  # too few to reach every split
    with caplog.at_level(logging.INFO, logger="absl"):
        result = train_in_process("--dataset=folder", f"--data_dir={data_dir}", f"--model_dir={tmp_path / 'run'}",
                                  f"--cache_dir={tmp_path / 'cache'}", "--max_steps=2", "--batch_size=4",
                                  "--export=false", "--verbosity=0")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "22 files in 3 classes; train 18, eval 2, test 2" in caplog.text  # 1 + 1 of each class of 10
    assert "The test split has no clips of 1 class(es): rare" in caplog.text
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["per_class_accuracy"]["rare"] is None
    assert all(isinstance(metrics["per_class_accuracy"][name], float) for name in ("high", "low"))


def test_ctrl_c_during_the_final_export_then_the_same_command_makes_it(tiny_data, tmp_path):
    model_dir = tmp_path / "run"
    flags = [*_common(tiny_data, tmp_path), "--mode=estimator", "--max_steps=12", "--eval_every_steps=6",
             f"--model_dir={model_dir}"]
    # exports: best/ at step 6, then final/ at step 12 (its SavedModel written, not yet published)
    process = start_paused("export:2", os.path.join(REPO, "train.py"), *flags, stderr_to=tmp_path / "stderr.txt")
    final = model_dir / "export" / "final"
    assert [path.name.startswith(".tmp-") for path in final.iterdir()] == [True]
    process.send_signal(signal.SIGINT)
    process.wait(timeout=120)
    assert process.returncode == 130, (tmp_path / "stderr.txt").read_text()[-3000:]
    result = train_in_process(*flags)
    assert result.returncode == 0, result.stderr[-3000:]
    exports = sorted(path.name for path in final.iterdir())
    assert len(exports) == 1 and exports[0].isdigit(), exports
    assert (final / exports[0] / "saved_model.pb").exists()


def test_a_rerun_of_a_finished_folder_with_other_flags_keeps_the_flags_that_trained_it(tiny_data, tmp_path):
    model_dir = tmp_path / "run"
    first = train_in_process(*_common(tiny_data, tmp_path), "--max_steps=6", "--noexport", f"--model_dir={model_dir}")
    assert first.returncode == 0, first.stderr[-3000:]
    trained_with = (model_dir / "flags.txt").read_text()
    rerun = train_in_process(*_common(tiny_data, tmp_path), "--max_steps=6", "--noexport", "--learning_rate=0.5",
                             f"--model_dir={model_dir}")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert (model_dir / "flags.txt").read_text() == trained_with  # nothing trained: still the model's flags
    more = train_in_process(*_common(tiny_data, tmp_path), "--max_steps=12", "--noexport", f"--model_dir={model_dir}")
    assert more.returncode == 0, more.stderr[-3000:]
    assert "--max_steps=12" in (model_dir / "flags.txt").read_text()
    assert (model_dir / "flags.until-step-6.txt").read_text() == trained_with  # the first 6 steps' flags kept


@pytest.mark.parametrize("mode", ["keras", "estimator"])
def test_a_run_with_tf_use_legacy_keras_set_trains_evaluates_and_its_export_predicts(tiny_data, tmp_path, mode):
    """Teams that keep Keras 2 set TF_USE_LEGACY_KERAS=1 for their whole shell: train.py's runs and predictions
    work with it set (its own models are Keras 3's either way)."""
    model_dir = tmp_path / mode
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1"}
    result = run_train(*_common(tiny_data, tmp_path), f"--mode={mode}", "--max_steps=6", "--eval_every_steps=3",
                       f"--model_dir={model_dir}", env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((model_dir / "metrics.json").read_text())["steps"] == 6
    if mode == "estimator":
        return  # --mode=predict reads a keras run's export
    clip = next(iter(sorted(glob.glob(os.path.join(str(tiny_data), "*", "*.wav")))))
    predicted = run_train("--mode=predict", f"--model_dir={model_dir}", clip, env=env)
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    assert predicted.stdout.strip().splitlines()[-1].startswith(clip)
