"""train.py --mode=tune on tiny data with few steps: once through the real CLI, the rest in-process."""

import csv
import glob
import os
import signal
import subprocess
import sys


from conftest import REPO, run_train, start_paused, train_in_process

# Everything in the search space but frame_length_ms, fixed on the command line.
FIXED = ["--batch_size=8", "--shuffle_buffer=64", "--n_mels=20", "--time_shift_ms=50", "--noise_stddev=0.05",
         "--model=cnn", "--width=4", "--depth=1", "--dropout=0.1", "--learning_rate=0.003"]


def _common(tiny_data, tmp_path):
    return ["--mode=tune", "--dataset=folder", f"--data_dir={tiny_data}", f"--cache_dir={tmp_path / 'cache'}",
            "--clip_seconds=0.5", "--epochs=1"]


def _rows(model_dir):
    with open(model_dir / "tuning" / "trials.csv") as stream:
        return list(csv.DictReader(stream))


def test_a_search_writes_best_flags_tables_and_hparams_and_the_best_trains(tiny_data, tmp_path):
    model_dir = tmp_path / "run"
    result = run_train(*_common(tiny_data, tmp_path), "--batch_size=8", "--model=cnn", "--width=4", "--depth=1",
                    "--n_mels=20", "--frame_length_ms=25", "--max_trials=3", f"--model_dir={model_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "the 2 left of --max_trials=3 take about" in result.stderr  # a time estimate after the first trial
    # Same pre-cache settings in every trial: one train and one eval entry serve all three.
    from compat.data import cache

    assert sorted(e.description["split"] for e in cache.list_entries(str(tmp_path / "cache"))) == ["eval", "train"]
    rows = _rows(model_dir)
    assert len(rows) == 3 and all(row["status"] == "COMPLETED" for row in rows)
    assert "batch_size" not in rows[0] and "model" not in rows[0]  # set on the command line: not searched
    assert {"noise_stddev", "learning_rate", "objective", "wall_seconds", "data_seconds"} <= set(rows[0])
    assert "n_mels" not in rows[0]
    assert (model_dir / "tuning" / "trials.md").read_text().startswith("| ")
    import tensorflow as tf

    events = glob.glob(str(model_dir / "tuning" / "logs" / "**" / "events.out.tfevents.*"), recursive=True)
    plugins = {value.metadata.plugin_data.plugin_name for path in events
               for event in tf.compat.v1.train.summary_iterator(path) for value in event.summary.value}
    assert "hparams" in plugins  # TensorBoard's HParams dashboard reads these
    best = (model_dir / "tuning" / "best.flags").read_text().splitlines()
    names = [line.split("=")[0] for line in best]
    assert "--batch_size=8" in best and "--mode" not in names and "--tuner" not in names
    trained = train_in_process(f"--flagfile={model_dir / 'tuning' / 'best.flags'}", "--mode=keras", "--noexport")
    assert trained.returncode == 0, trained.stderr[-3000:]
    assert (model_dir / "best" / "metrics.json").is_file()


def test_a_failing_trial_is_recorded_and_the_search_finishes(tiny_data, tmp_path):
    # A 22 ms hop: the grid's 20 ms frame is shorter than its hop (invalid), 25 and 32 ms are fine.
    model_dir = tmp_path / "run"
    command = [*_common(tiny_data, tmp_path), *FIXED, "--frame_step_ms=22", "--tuner=grid", "--max_trials=3",
               f"--model_dir={model_dir}"]
    result = train_in_process(*command)
    assert result.returncode == 0, result.stderr[-3000:]
    statuses = sorted((row["frame_length_ms"], row["status"]) for row in _rows(model_dir))
    assert statuses == [("20.0", "FAILED"), ("25.0", "COMPLETED"), ("32.0", "COMPLETED")]
    again = train_in_process(*command)
    assert again.returncode != 0 and "GridSearch fails on resume" in again.stderr


def test_an_interrupted_search_resumes_without_rerunning_finished_trials(tiny_data, tmp_path):
    model_dir = tmp_path / "run"
    flags = [*_common(tiny_data, tmp_path), *FIXED[:-1], "--max_trials=3", f"--model_dir={model_dir}"]
    process = start_paused("trial:1", os.path.join(REPO, "train.py"), *flags)
    process.send_signal(signal.SIGKILL)  # held just after keras-tuner recorded its first trial as ended
    process.wait()
    first = model_dir / "tuning" / "search" / "trial_0" / "trial.json"
    finished = first.read_text()
    assert '"COMPLETED"' in finished
    result = train_in_process(*flags)  # the same command again (its main(), in this process)
    assert result.returncode == 0, result.stderr[-3000:]
    assert first.read_text() == finished  # trial 0 was not run again
    rows = _rows(model_dir)
    assert len(rows) == 3 and all(row["status"] == "COMPLETED" for row in rows)


def test_the_pipeline_target_measures_candidates_and_picks_the_fastest(tiny_data, tmp_path):
    model_dir = tmp_path / "run"
    result = train_in_process(*_common(tiny_data, tmp_path), "--tune_target=pipeline", "--prefetch=2",
                    f"--model_dir={model_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "examples/s against" in result.stdout and "with AUTOTUNE defaults" in result.stdout
    report = (model_dir / "tuning" / "pipeline.md").read_text()
    assert "| defaults (AUTOTUNE) |" in report and "| num_parallel_calls | 4 |" in report
    assert "| prefetch |" not in report  # set on the command line: not varied
    best = (model_dir / "tuning" / "best.flags").read_text().splitlines()
    assert "--prefetch=2" in best and any(line.startswith("--num_parallel_calls=") for line in best)


def test_a_chief_and_a_worker_finish_a_distributed_search(tiny_data, tmp_path):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model_dir = tmp_path / "run"
    command = [sys.executable, os.path.join(REPO, "train.py"), *_common(tiny_data, tmp_path), *FIXED[:-1],
               "--max_trials=2", f"--model_dir={model_dir}"]
    processes = {}
    try:
        for role in ("chief", "tuner0"):
            env = {**os.environ, "KERASTUNER_TUNER_ID": role, "KERASTUNER_ORACLE_IP": "127.0.0.1",
                   "KERASTUNER_ORACLE_PORT": str(port)}
            # No start order is needed: keras-tuner's client waits for the chief's oracle (wait_for_ready).
            processes[role] = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE,
                                               stderr=subprocess.PIPE, text=True)
        outputs = {role: process.communicate(timeout=600) for role, process in processes.items()}
    finally:  # never leave a chief or a worker behind
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
    for role, process in processes.items():
        assert process.returncode == 0, f"{role}: {outputs[role][1][-3000:]}"
    assert "tuning worker tuner0 finished" in outputs["tuner0"][0]
    assert len(_rows(model_dir)) == 2 and (model_dir / "tuning" / "best.flags").is_file()


def test_each_trial_trains_the_flags_budget_numbered_as_keras_tuner_logs_and_the_front_is_written(
        tiny_data, tmp_path):
    model_dir = tmp_path / "run"
    # 24 files, 80 % train, batch 8: 3 steps per epoch; --max_steps=4 validated every 2 steps.
    result = train_in_process(*_common(tiny_data, tmp_path), *FIXED, "--max_steps=4", "--eval_every_steps=2",
                              "--max_trials=2", f"--model_dir={model_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = _rows(model_dir)
    assert [row["trial"] for row in rows] == ["1", "2"]  # keras-tuner logs "Trial 1", "Trial 2"
    assert [row["steps"] for row in rows] == ["4", "4"]
    assert all(float(row["train_examples_per_second"]) > 0 and float(row["seconds_to_best"]) > 0 for row in rows)

    tuning = model_dir / "tuning"
    front = tuning / "pareto.md"
    assert front.read_text().count("\n| ") >= 2  # header, and one trial at least
    pareto_flags = sorted(os.listdir(tuning / "pareto"))
    assert pareto_flags and set(pareto_flags) <= {"1.flags", "2.flags"}
    for name in pareto_flags:
        assert f"--model_dir={model_dir / 'pareto' / name[:-6]}" in (tuning / "pareto" / name).read_text()
    assert (tuning / "pareto.png").read_bytes().startswith(b"\x89PNG")
    # The fastest completed trial is on the front: nothing is faster, so nothing beats it on both.
    fastest = max(rows, key=lambda row: float(row["train_examples_per_second"]))["trial"]
    assert f"{fastest}.flags" in pareto_flags


def test_the_default_space_is_sized_for_the_machine():
    import keras_tuner

    from compat.modes import tuning

    def values(accelerated: bool) -> dict:
        hp = keras_tuner.HyperParameters()
        for pick in tuning._space(accelerated).values():
            pick(hp)
        return {p.name: list(p.values) if hasattr(p, "values") else (p.min_value, p.max_value) for p in hp.space}

    cpu, gpu = values(False), values(True)
    assert "cnn" in gpu["model"] and "cnn" not in cpu["model"] and cpu["model"]
    assert max(cpu["width"]) == 32 and max(gpu["width"]) == 64
    assert max(cpu["batch_size"]) == 64 and max(gpu["batch_size"]) == 128
    assert cpu["depth"] == [1, 2, 3] and gpu["depth"] == [1, 2, 3, 4]


def test_the_bayesian_tuner_is_refused_with_the_extra_to_install_where_scikit_learn_is_missing(tiny_data, tmp_path):
    """scikit-learn is an extra ([bayesian]): Keras imports it on every `import tensorflow` when it is installed.
    Only a model search that uses the tuner is refused; other modes given the same flags run."""
    import importlib.util

    from compat.modes import tuning
    from compat.config import TuneConfig

    if all(importlib.util.find_spec(name) for name in ("sklearn", "scipy")):
        tuning.check_tuner_installed(TuneConfig(tuner="bayesian"))  # installed: nothing to refuse
        return
    result = train_in_process("--mode=tune", "--tuner=bayesian", f"--model_dir={tmp_path / 'run'}")
    assert result.returncode == 2, result.stderr[-2000:]
    assert "--tuner=bayesian needs scikit-learn" in result.stderr and "pip install -e '.[bayesian]'" in result.stderr
    assert not (tmp_path / "run").exists()
    trained = train_in_process("--dataset=folder", f"--data_dir={tiny_data}", f"--cache_dir={tmp_path / 'cache'}",
                               "--clip_seconds=0.5", "--batch_size=8", "--model=cnn", "--width=4", "--depth=1",
                               "--max_steps=2", "--noexport", "--tuner=bayesian", f"--model_dir={tmp_path / 'keras'}")
    assert trained.returncode == 0, trained.stderr[-2000:]


def test_an_objective_no_trial_logs_is_refused_before_the_search_with_the_names_to_use(tiny_data, tmp_path):
    model_dir = tmp_path / "search"
    result = train_in_process("--mode=tune", "--dataset=folder", f"--data_dir={tiny_data}",
                              f"--cache_dir={tmp_path / 'cache'}", "--objective=val_acc", f"--model_dir={model_dir}")
    assert result.returncode == 2, result.stderr[-2000:]
    line = result.stderr.strip().splitlines()[-1]
    assert "objective 'val_acc' is not a metric a trial logs" in line and "val_accuracy" in line, line
    assert "Traceback" not in result.stderr and not model_dir.exists()
