"""The migration check (`python -m compat.estimator.check`) on legacy snippets in the styles of 2017-2023
(tests/data/legacy_snippets): what it reports, and that running the programs shows the same."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from compat.estimator import check, compatibility
from conftest import REPO

SNIPPETS = os.path.join(REPO, "tests", "data", "legacy_snippets")


def uses(name):
    path = os.path.join(SNIPPETS, name)
    return [(use.line, use.name, use.status) for use in check.check_source(open(path).read(), path)]


def test_tf1_names_through_import_tensorflow_are_refused_with_their_v1_spelling():
    found = uses("tf1_2017.py")
    refused = {name for _, name, status in found if status == compatibility.REFUSED}
    # the Estimator surface's TF 1.x names (tf.estimator.inputs was TF 1.x's: TF 2.15's v2 API lacked it), and
    # the others TensorFlow >= 2.16 lacks (tf.losses)
    assert refused == {"tf.layers.dense", "tf.train.AdamOptimizer", "tf.train.get_global_step",
                       "tf.losses.sparse_softmax_cross_entropy", "tf.estimator.inputs.numpy_input_fn"}
    assert (11, "tf.estimator.EstimatorSpec", compatibility.SAME) in found
    note = compatibility.lookup("tf.train.AdamOptimizer").note
    assert "tf.compat.v1.train.AdamOptimizer" in note


def test_a_name_the_namespace_lacks_is_not_called_fine_and_no_tensorflow_loads():
    """TF 1.x spellings below tf.estimator (TF 2.15's v2 API lacked them) are refused with the spelling --fix
    gives them, a typo is unknown: decided from TF 2.15's recorded names, in a process without TensorFlow."""
    program = (
        "from compat.estimator import check\n"
        "source = ('import tensorflow as tf\\nkm = tf.estimator.experimental.KMeans(3)\\n'\n"
        "          'ok = tf.compat.v1.estimator.experimental.KMeans\\nfn = tf.estimator.inputs.numpy_input_fn\\n'\n"
        "          'typo = tf.estimator.DNNClasifier\\n')\n"
        "import json, sys\n"
        "found = [(u.line, u.name, u.status, u.note) for u in check.check_source(source)]\n"
        "print(json.dumps({'found': found, 'tensorflow': 'tensorflow' in sys.modules}))\n"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, cwd=REPO, timeout=120)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["tensorflow"] is False
    found = {name: (line, status, note) for line, name, status, note in report["found"]}
    assert found["tf.estimator.experimental.KMeans"][1] == compatibility.REFUSED
    assert "tf.compat.v1.estimator.experimental.KMeans (--fix rewrites it)" in found["tf.estimator.experimental.KMeans"][2]
    assert found["tf.compat.v1.estimator.experimental.KMeans"][1] == compatibility.SAME
    assert found["tf.estimator.inputs.numpy_input_fn"][1] == compatibility.REFUSED
    assert found["tf.estimator.DNNClasifier"][1] == compatibility.UNKNOWN


def test_from_imports_of_the_estimator_modules_work_after_install(installed):
    from tensorflow.compat.v1.estimator import DNNClassifier as V1DNNClassifier
    from tensorflow.estimator import DNNClassifier
    from tensorflow.keras.estimator import model_to_estimator

    import compat.estimator as estimator

    assert DNNClassifier is estimator.DNNClassifier and model_to_estimator is estimator.model_to_estimator
    assert V1DNNClassifier is estimator.canned.DNNClassifierV1


def test_a_compat_v1_alias_resolves_every_name_below_it():
    found = uses("compat_v1_2019.py")
    names = [name for _, name, _ in found]
    assert "tf.compat.v1.layers.dense" in names and "tf.compat.v1.train.AdamOptimizer" in names
    # an attribute chain below a public name is reported as that name, once per line
    assert (13, "tf.compat.v1.estimator.ModeKeys", compatibility.SAME) in found
    assert all(status != compatibility.REFUSED for _, _, status in found)


def test_a_name_whose_differences_depend_on_use_is_noted_only_for_what_the_file_uses():
    """The Estimator differs for Keras 3 layers in a model_fn and for replication: a file that does neither
    runs it as TF 2.15 did, and one that does both reads both notes (and RunConfig's for the cluster)."""
    notes = {use.name: (use.status, use.note) for use in check.check_source(
        open(os.path.join(SNIPPETS, "compat_v1_2019.py")).read())}
    assert notes["tf.compat.v1.estimator.Estimator"] == (compatibility.SAME, "")
    notes = {use.name: (use.status, use.note) for use in check.check_source(
        open(os.path.join(SNIPPETS, "keras_layers_mirrored_2022.py")).read())}
    status, note = notes["tf.estimator.Estimator"]
    assert status == compatibility.DIFFERS and "Keras 3 layers" in note and "train_distribute" in note
    assert notes["tf.estimator.RunConfig"][0] == compatibility.DIFFERS
    without_keras = check.check_source("import tensorflow as tf\n"
                                       "tf.estimator.Estimator(f, config=tf.estimator.RunConfig(train_distribute=s))\n")
    status, note = {use.name: (use.status, use.note) for use in without_keras}["tf.estimator.Estimator"]
    assert status == compatibility.DIFFERS and "Keras 3" not in note and "train_distribute" in note


def test_renamed_from_imports_and_star_imports_are_followed_and_strings_are_not_uses():
    assert uses("from_imports_2021.py") == [
        (7, "tf.feature_column.numeric_column", compatibility.SAME),
        (11, "tf.estimator.DNNClassifier", compatibility.SAME),
        (12, "tf.estimator.RunConfig", compatibility.SAME),  # no train_distribute: nothing differs
        (16, "tf.keras.estimator.model_to_estimator", compatibility.DIFFERS),
    ]
    assert uses("star_and_strings_2023.py") == [  # line 5's string and comment name nothing
        (9, "tf.estimator.TrainSpec", compatibility.SAME),
        (10, "tf.estimator.experimental.stop_if_no_decrease_hook", compatibility.SAME),
        (11, "tf.contrib.estimator.add_metrics", compatibility.REFUSED),
    ]


def test_the_command_reports_per_file_and_fails_ci_on_a_refused_use(tmp_path, capsys):
    command = [sys.executable, "-m", "compat.estimator.check"]
    result = subprocess.run([*command, SNIPPETS, "--format=json"], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 1, result.stderr[-2000:]  # two snippets use refused names
    report = json.loads(result.stdout)
    verdicts = {os.path.basename(path): entry["verdict"] for path, entry in report["files"].items()}
    assert verdicts == {"compat_v1_2019.py": "runs as on TF 2.15",
                        "from_imports_2021.py": "runs, with the differences listed",
                        "keras_layers_mirrored_2022.py": "runs, with the differences listed",
                        "star_and_strings_2023.py": "uses something refused",
                        "tf1_2017.py": "uses something refused"}
    assert report["summary"][compatibility.REFUSED] == 7  # tf1_2017.py: six, and tf.losses off the surface
    # the same entry point in process (the subprocess above is the command itself)
    assert check.main([os.path.join(SNIPPETS, "from_imports_2021.py")]) == 0
    assert "4 uses (3 as TF 2.15, 1 differs)" in capsys.readouterr().out
    broken = tmp_path / "broken.py"
    broken.write_text("import tensorflow as tf\ndef f(:\n")
    assert check.main([str(broken)]) == 2 and f"{broken}: not checked (SyntaxError" in capsys.readouterr().out


@pytest.mark.parametrize("snippet", ["compat_v1_2019.py", "tf1_2017.py"])
def test_running_a_program_shows_what_the_check_said(snippet, tmp_path):
    """The entry point, changed as `--diff` shows, runs when the check found nothing refused, and fails on
    the first refused name when it did."""
    path = os.path.join(SNIPPETS, snippet)
    source = open(path).read()
    diff = check.install_diff(source, path)
    added = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added == [check.INSTALL_LINE]
    lines = source.splitlines(keepends=True)
    after = next(i for i, line in enumerate(lines) if line.startswith(("import tensorflow.compat.v1 as tf",
                                                                      "import tensorflow as tf")))
    changed = tmp_path / snippet
    changed.write_text("".join([*lines[:after], check.INSTALL_LINE + "\n", *lines[after:]]))  # before it
    result = subprocess.run([sys.executable, str(changed), str(tmp_path / "run")], capture_output=True, text=True,
                            cwd=REPO, env={**os.environ, "PYTHONPATH": REPO}, timeout=300)
    refused = [use for use in check.check_source(source, path) if use.status == compatibility.REFUSED]
    if refused:
        assert result.returncode != 0 and "has no attribute 'layers'" in result.stderr, result.stderr[-2000:]
    else:
        assert result.returncode == 0 and "trained to step 2" in result.stdout, result.stderr[-2000:]


def test_the_check_points_at_the_conversion_for_the_estimators_a_file_trains(capsys):
    assert check.main([os.path.join(SNIPPETS, "from_imports_2021.py")]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "compat.estimator.to_keras" in last and "DNNClassifier, model_to_estimator" in last
    assert check.main([os.path.join(SNIPPETS, "compat_v1_2019.py")]) == 0  # a custom model_fn: its export
    assert "(through their exports)" in capsys.readouterr().out.strip().splitlines()[-1]


def test_any_tf_keras_model_in_a_file_brings_the_keras_note_not_only_its_layers():
    source = ("import tensorflow as tf\n"
              "def model_fn(features, labels, mode):\n"
              "    net = tf.keras.Sequential([tf.keras.Input((3,))])\n"
              "est = tf.estimator.Estimator(model_fn)\n")
    notes = {use.name: (use.status, use.note) for use in check.check_source(source)}
    assert notes["tf.estimator.Estimator"][0] == compatibility.DIFFERS and "Keras 3" in notes["tf.estimator.Estimator"][1]


# -- --fix: from TF 1.x to TensorFlow >= 2.16 --------------------------------------------------------------

TF1_PROGRAM = os.path.join(REPO, "tests", "helpers", "tf1_2018_program.py")
CHECK = [sys.executable, "-m", "compat.estimator.check"]


def test_every_tf1_name_a_2018_program_uses_is_reported_with_its_tf2_spelling():
    source = open(TF1_PROGRAM).read()
    reported = {use.name: use for use in check.check_source(source, TF1_PROGRAM)}
    for name, spelling in (("tf.app.flags", "tf.compat.v1.app.flags"), ("tf.logging.set_verbosity", "tf.compat.v1"),
                           ("tf.placeholder", "tf.compat.v1.placeholder"), ("tf.ConfigProto", "tf.compat.v1.ConfigProto"),
                           ("tf.GraphKeys", "tf.compat.v1.GraphKeys"), ("tf.get_collection", "tf.compat.v1"),
                           ("tf.losses.sparse_softmax_cross_entropy", "tf.compat.v1.losses"),
                           ("tf.metrics.accuracy", "tf.compat.v1.metrics.accuracy"), ("tf.app.run", "tf.compat.v1.app.run"),
                           ("tf.data.Dataset.make_one_shot_iterator", "tf.compat.v1.data.make_one_shot_iterator"),
                           ("tf.contrib.estimator.stop_if_no_decrease_hook", "tf.estimator.experimental")):
        assert reported[name].status == compatibility.REFUSED and spelling in reported[name].note, name
    assert reported["tf.summary.scalar"].status == compatibility.DIFFERS  # TF 2 has a summary.scalar of its own
    contrib_learn = check.check_source("import tensorflow as tf\nm = tf.contrib.learn.DNNClassifier\n")
    assert "use tf.estimator.DNNClassifier" in contrib_learn[0].note


def test_fix_moves_tf_contrib_estimator_names_to_their_tf_2_15_homes():
    source = ("import tensorflow as tf\nest = tf.contrib.estimator.add_metrics(None, None)\n"
              "hook = tf.contrib.estimator.stop_if_no_increase_hook\n")
    fixed = check.fixed_source(source, "program.py")
    assert "tf.estimator.add_metrics(None, None)" in fixed
    assert "tf.estimator.experimental.stop_if_no_increase_hook" in fixed and "contrib" not in fixed


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tf1_2018_program.py", "tf1_2017_canned_program.py"])
def test_a_tf1_program_runs_after_fix_alone_and_matches_tf_2_15_after_its_upgrader(name, tmp_path):
    original = os.path.join(REPO, "tests", "helpers", name)
    program = tmp_path / name
    shutil.copy(original, program)
    diff = subprocess.run([*CHECK, str(program), "--diff"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert open(program).read() == open(original).read()  # --diff writes nothing
    fixed = subprocess.run([*CHECK, str(program), "--fix"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert fixed.returncode == 0, fixed.stdout[-3000:] + fixed.stderr[-3000:]  # nothing left for a person
    assert f"fixed {program}" in fixed.stdout
    changed = [line[1:] for line in diff.stdout.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert changed and all(line in program.read_text().splitlines() for line in changed)  # what --fix wrote
    assert subprocess.run([*CHECK, str(program)], capture_output=True, cwd=REPO).returncode == 0
    result = subprocess.run([sys.executable, str(program), f"--model_dir={tmp_path / 'model'}"], capture_output=True,
                            text=True, cwd=tmp_path, timeout=600, env={**os.environ, "PYTHONPATH": REPO})
    assert result.returncode == 0, result.stderr[-3000:]
    ours = json.loads(result.stdout.strip().splitlines()[-1])
    recorded = json.load(open(os.path.join(REPO, "tests", "data", "tf215_tf1_programs.json")))[name]
    for key in ("metric_keys", "global_step", "variables", "signatures", "steps_counted"):
        assert ours.get(key) == recorded.get(key), key
    assert abs(ours["accuracy"] - recorded["accuracy"]) <= 0.10


def test_fix_comments_what_it_cannot_rewrite_and_the_check_still_names_it(tmp_path):
    program = tmp_path / "old.py"
    program.write_text("import tensorflow as tf\n\n\ndef build():\n    return tf.contrib.learn.Experiment(None)\n")
    first = subprocess.run([*CHECK, str(program), "--fix"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert first.returncode == 1, first.stdout[-2000:]  # refused: a person must change it
    lines = program.read_text().splitlines()
    comment = lines.index(next(line for line in lines if check.FIX_COMMENT in line))
    assert lines[comment].startswith("    # compat.estimator.check: tf.contrib.learn.Experiment")
    assert "tf.contrib.learn.Experiment(None)" in lines[comment + 1]
    again = subprocess.run([*CHECK, str(program), "--fix"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert again.returncode == 1 and program.read_text().count(check.FIX_COMMENT) == 1  # not commented twice


def test_fix_refuses_in_one_line_and_changes_nothing(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import tensorflow as tf\ntf.logging.info('x'\n")
    good = tmp_path / "good.py"
    good.write_text("import tensorflow as tf\ntf.logging.info('x')\n")
    result = subprocess.run([*CHECK, str(tmp_path), "--fix"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 2
    assert f"{broken}: does not parse as Python (line 2); fix it, then run --fix again; no file was changed" in \
        result.stdout.splitlines()
    assert good.read_text() == "import tensorflow as tf\ntf.logging.info('x')\n"  # whole or not at all
    broken.unlink()
    good.chmod(0o444)
    result = subprocess.run([*CHECK, str(good), "--fix"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 2 and result.stdout.splitlines()[0] == (
        f"{good}: read-only; make it writable to --fix it; no file was changed")
    assert good.read_text() == "import tensorflow as tf\ntf.logging.info('x')\n"
    empty = tmp_path / "no_python"
    empty.mkdir()
    result = subprocess.run([*CHECK, str(empty), "--fix"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 2 and result.stdout.strip() == (
        f"no Python files in {empty}: nothing checked, nothing changed")


def test_tf2_code_is_neither_reported_nor_rewritten_as_tf1(tmp_path):
    """Names TensorFlow 2 has too (tf.keras.optimizers.Adam, tf.debugging.assert_equal) and a TF 2 canned
    estimator's call mean TF 2's: --fix leaves them, and adds only the install line."""
    source = ("import tensorflow as tf\nopt = tf.keras.optimizers.Adam(1e-3)\ntf.debugging.assert_equal(1, 1)\n"
              "model = tf.estimator.DNNClassifier(hidden_units=[2], feature_columns=[])\n")
    assert [use.name for use in check.check_source(source)] == ["tf.estimator.DNNClassifier"]
    fixed = check.fixed_source(source, "tf2.py")
    assert fixed == check.INSTALL_LINE + "\n" + source  # no loss_reduction, no legacy optimizer


def test_fix_comments_above_the_statement_and_keeps_the_files_mode(tmp_path):
    program = tmp_path / "continued.py"
    program.write_text("import tensorflow as tf\nvalue = 1 + \\\n    tf.contrib.learn.Experiment\n")
    program.chmod(0o755)
    result = subprocess.run([*CHECK, str(program), "--fix"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 1, result.stdout[-2000:]
    lines = program.read_text().splitlines()
    assert lines[-3].startswith(check.FIX_COMMENT) and lines[-2] == "value = 1 + \\"
    compile(program.read_text(), str(program), "exec")  # still Python
    assert (program.stat().st_mode & 0o777) == 0o755


def test_every_spelling_of_tf_2_15s_namespaces_is_checked_as_the_name_it_is():
    """`tf.compat.v2.estimator` is `tf.estimator`, `tf.compat.v2.compat.v1.layers` is `tf.compat.v1.layers`
    (install() gives each spelling, compat/core/tf_namespaces.py); a TF 1.x name stays refused by any spelling."""
    source = ("import tensorflow.compat.v2 as tf\nimport tensorflow as tf_\n"
              "est = tf.estimator.Estimator\nlayer = tf.compat.v1.layers.dense\n"
              "v1 = tf_.compat.v2.compat.v1.estimator.LinearClassifier\nspec = tf_.compat.v1.compat.v2.estimator.EstimatorSpec\n"
              "old = tf_.compat.v2.layers.dense\n")
    found = [(use.line, use.name, use.status) for use in check.check_source(source)]
    assert found == [(3, "tf.estimator.Estimator", compatibility.SAME),
                     (4, "tf.compat.v1.layers.dense", compatibility.SAME),
                     (5, "tf.compat.v1.estimator.LinearClassifier", compatibility.SAME),
                     (6, "tf.estimator.EstimatorSpec", compatibility.SAME),
                     (7, "tf.layers.dense", compatibility.REFUSED)]


def test_a_codebase_using_tf_keras_hears_what_tf_use_legacy_keras_changes_and_others_do_not(capsys):
    """Keras 2 teams set TF_USE_LEGACY_KERAS=1: the report says what that changes where the code uses tf.keras
    (nothing it asks for changes), and says nothing of it to a codebase that does not."""
    assert check.main([os.path.join(SNIPPETS, "from_imports_2021.py")]) == 0
    out = capsys.readouterr().out
    uses_keras = any(use.name.startswith("tf.keras.") for use in check.check_source(
        open(os.path.join(SNIPPETS, "from_imports_2021.py")).read()))
    assert ("TF_USE_LEGACY_KERAS=1" in out) == uses_keras
    assert check.main([os.path.join(REPO, "tests", "helpers", "keras2_model_to_estimator.py")]) == 0
    assert "TF_USE_LEGACY_KERAS=1 tf.keras is Keras 2" in capsys.readouterr().out


def test_the_wheel_holds_what_the_check_opens_and_fix_runs_from_it(tmp_path):
    """An install from the wheel, not the checkout (`pip install estimator-compat`): the package data the check
    and `--fix` open ship in it. The wheel is built here and installed without its dependencies into a folder
    of its own; the test's environment gives those. A TF 1.x file is fixed, and then runs, from outside the
    checkout."""
    source = tmp_path / "source"  # the checkout as a clone has it: no build/ or egg-info of an earlier install
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "__pycache__", ".pytest_cache", "runs", "tests"))
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                            str(wheels), str(source)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    site = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
                                *map(str, wheels.glob("*.whl"))], capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-3000:]
    program = tmp_path / "work" / "tf1_2018_program.py"
    program.parent.mkdir()
    shutil.copy(os.path.join(REPO, "tests", "helpers", "tf1_2018_program.py"), program)
    env = {**os.environ, "PYTHONPATH": str(site), "TF_CPP_MIN_LOG_LEVEL": "2"}
    where = subprocess.run([sys.executable, "-c", "import compat; print(compat.__file__)"], capture_output=True,
                           text=True, cwd=program.parent, env=env)
    assert where.stdout.strip().startswith(str(site)), where.stdout + where.stderr  # the wheel's, not the checkout's
    fixed = subprocess.run([sys.executable, "-m", "compat.estimator.check", str(program), "--fix"],
                           capture_output=True, text=True, cwd=program.parent, env=env, timeout=300)
    assert fixed.returncode == 0, fixed.stdout[-3000:] + fixed.stderr[-3000:]
    ran = subprocess.run([sys.executable, str(program), f"--model_dir={tmp_path / 'model'}"], capture_output=True,
                         text=True, cwd=program.parent, env=env, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert json.loads(ran.stdout.strip().splitlines()[-1])["global_step"] > 0


def test_export_savedmodel_is_reported_and_fix_renames_it(tmp_path):
    """TF 2.15's tf.estimator.Estimator raised AttributeError at `export_savedmodel` (TF 1.x's name; it runs here):
    the check says so, and `--fix` renames the call to export_saved_model, but for a call passing
    strip_default_attrs, which the new name lacks."""
    program = tmp_path / "exporting.py"
    program.write_text("import tensorflow as tf\n\nest = tf.estimator.Estimator(lambda features, labels, mode: None)\n"
                       "path = est.export_savedmodel('/tmp/export', lambda: None)  # 2018\n"
                       "other = est.export_savedmodel('/tmp/export', lambda: None, strip_default_attrs=True)\n")
    found = {(use.line, use.name, use.status) for use in check.check_source(program.read_text())}
    assert {(4, "tf.estimator.Estimator.export_savedmodel", compatibility.DIFFERS),
            (5, "tf.estimator.Estimator.export_savedmodel", compatibility.DIFFERS)} <= found
    fixed = check.fixed_source(program.read_text(), str(program))
    assert "path = est.export_saved_model('/tmp/export', lambda: None)  # 2018" in fixed
    assert "other = est.export_savedmodel('/tmp/export', lambda: None, strip_default_attrs=True)" in fixed


def test_a_namespace_bound_to_a_name_is_what_it_is_not_unknown():
    """`estimator = tf.estimator` (the 2018 idiom) was reported unknown: a namespace above names that run here is
    as TF 2.15; one above no such names (TF 1.x's tf.layers) is not vouched for."""
    source = ("import tensorflow as tf\nestimator = tf.estimator\nv1 = tf.compat.v1.estimator\n"
              "keras_estimator = tf.keras.estimator\nlayers = tf.layers\n")
    found = [(use.line, use.name, use.status) for use in check.check_source(source)]
    assert found[:3] == [(2, "tf.estimator", compatibility.SAME), (3, "tf.compat.v1.estimator", compatibility.SAME),
                         (4, "tf.keras.estimator", compatibility.SAME)]
    assert (5, "tf.layers", compatibility.SAME) not in found


def test_this_toolkits_own_names_are_not_unknown():
    """A program part-way through its migration uses the names this toolkit adds (tf.estimator.to_keras after
    install()): they run here, so the check says so, not "no such name here"; a typo stays unknown."""
    source = ("import tensorflow as tf\nk = tf.estimator.to_keras\ns = tf.estimator.export_keras_saved_model\n"
              "t = tf.estimator.to_kerass\nu = tf.estimator.experimental.no_such_hook\n")
    found = [(use.line, use.status, use.note) for use in check.check_source(source)]
    assert [(line, status) for line, status, _ in found] == [
        (2, compatibility.DIFFERS), (3, compatibility.DIFFERS), (4, compatibility.UNKNOWN), (5, compatibility.UNKNOWN)]
    assert "own name" in found[0][2]


def test_dimension_value_is_reported_and_fix_makes_the_code_run(tmp_path):
    """TF 1.x's `shape[i].value` fails on TF 2's int dimensions: the check refuses it, and `--fix` rewrites each
    (several on a line, through `get_shape()` and `.dims`) to tf.compat.v1.dimension_value, after which it runs."""
    program = tmp_path / "shapes.py"
    program.write_text("import tensorflow as tf\nx = tf.zeros([2, 3])\na = x.shape[-1].value\n"
                       "b = x.get_shape()[0].value + x.shape.dims[1].value\nprint(a, b)\n")
    found = check.check_source(program.read_text(), str(program))
    assert [(use.line, use.status) for use in found] == [(3, compatibility.REFUSED)] + [(4, compatibility.REFUSED)] * 2
    fixed = subprocess.run([sys.executable, "-m", "compat.estimator.check", "--fix", str(program)],
                           capture_output=True, text=True, cwd=REPO, timeout=300)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr[-2000:]
    assert "tf.compat.v1.dimension_value(x.get_shape()[0]) + tf.compat.v1.dimension_value(x.shape.dims[1])" \
        in program.read_text()
    ran = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0 and ran.stdout.split() == ["3", "5"], ran.stderr[-2000:]


def test_what_fix_rewrites_is_said_and_its_rewrites_raise_no_note_of_their_own():
    """A refused name --fix rewrites says what it becomes; tf.contrib's xavier initializer rewritten to a Keras
    initializer does not make the Estimator "differ" for Keras layers the program never calls."""
    source = ("import tensorflow as tf\n"
              "def model_fn(features, labels, mode):\n"
              "    w = tf.layers.dense(features, 1, kernel_initializer=tf.contrib.layers.xavier_initializer())\n"
              "    return tf.estimator.EstimatorSpec(mode, loss=tf.reduce_sum(w))\n"
              "est = tf.estimator.Estimator(model_fn)\n")
    notes = {use.name: use.note for use in check.check_source(source)}
    assert notes["tf.layers.dense"].endswith("--fix rewrites it to tf.compat.v1.layers.dense")
    assert "--fix rewrites it" in notes["tf.contrib.layers.xavier_initializer"]
    after = {use.name: use.status for use in check.check_source(check.fixed_source(source, "model.py"))}
    assert after["tf.estimator.Estimator"] == compatibility.SAME, after


def test_a_notebook_is_checked_by_cell_and_fixed_in_place_keeping_the_rest(tmp_path):
    """A TF 1.x notebook (tests/helpers/tf1_notebook.py): its uses reported by cell and line; `--fix` rewrites the
    code cells only (outputs, metadata, markdown, `%%bash` and IPython lines kept), after which its Python trains
    as TF 2.15 trained it after its own tf_upgrade_v2 and a hand edit (tests/helpers/tf215_notebook.py)."""
    sys.path.insert(0, os.path.join(REPO, "tests", "helpers"))
    import tf1_notebook

    path = tmp_path / "training.ipynb"
    path.write_text(json.dumps(tf1_notebook.notebook(), indent=1))
    report = subprocess.run([sys.executable, "-m", "compat.estimator.check", "--format=json", str(tmp_path)],
                            capture_output=True, text=True, cwd=REPO, timeout=300)
    uses = json.loads(report.stdout)["files"][str(path)]["uses"]
    assert {(use["path"], use["line"], use["name"]) for use in uses} >= {
        (f"{path} cell 3", 2, "tf.compat.v1.Dimension.value"), (f"{path} cell 3", 3, "tf.layers.dense"),
        (f"{path} cell 4", 6, "tf.estimator.inputs.numpy_input_fn")}
    fixed = subprocess.run([sys.executable, "-m", "compat.estimator.check", "--fix", str(path)],
                           capture_output=True, text=True, cwd=REPO, timeout=300)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr[-2000:]
    before, after = tf1_notebook.notebook(), json.loads(path.read_text())
    assert [cell["cell_type"] for cell in after["cells"]] == [cell["cell_type"] for cell in before["cells"]]
    assert after["metadata"] == before["metadata"] and after["cells"][1]["outputs"] == before["cells"][1]["outputs"]
    assert after["cells"][0] == before["cells"][0] and after["cells"][2] == before["cells"][2]
    first, model, train = ("".join(after["cells"][index]["source"]) for index in (1, 3, 4))
    assert first.startswith("!pip install -q nothing\n") and "compat.estimator.install()" in first
    assert "tf.compat.v1.dimension_value(features['x'].shape[-1])" in model and "%time print('timed')" in train
    program = tf1_notebook.program(after["cells"], str(tmp_path / "model"))
    ran = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert ran.returncode == 0 and "global step 5" in ran.stdout, ran.stderr[-3000:]
    ours = json.loads(ran.stdout.strip().splitlines()[-1])
    recorded = json.load(open(os.path.join(REPO, "tests", "data", "tf215_notebook.json")))
    # the same variables (Adam's slots included) and steps; not the same loss: tf.compat.v1.layers.dense draws its
    # kernel's initializer seed at random on TF 2.15 too, whatever the graph's seed
    assert ours["variables"] == recorded["variables"] and ours["global_step"] == recorded["global_step"]


def test_contrib_modules_imported_by_name_go_to_their_tf2_homes_and_layer_norm_here(tmp_path):
    """BERT's spelling, `from tensorflow.contrib import tpu as contrib_tpu`: --fix spells each use that has a TF 2
    home out so TensorFlow's upgrader renames it (TPUEstimator's, tf.data.experimental.map_and_batch), drops the
    imports left unused, and imports tf.contrib.layers from this project where it has every name the file takes
    (layer_norm): TF 1.x's layer norm, `LayerNorm/beta` and `gamma` under the caller's scope, where BERT's released
    checkpoints keep them, normalizing with TF 1.x's epsilon."""
    source = ("import tensorflow as tf\n"
              "from tensorflow.contrib import data as contrib_data\n"
              "from tensorflow.contrib import layers as contrib_layers\n"
              "from tensorflow.contrib import tpu as contrib_tpu\n"
              "def norm(x):\n"
              "    return contrib_layers.layer_norm(inputs=x, begin_norm_axis=-1, begin_params_axis=-1)\n"
              "def input_fn(params):\n"
              "    return tf.data.Dataset.range(8).apply(contrib_data.map_and_batch(lambda r: r, batch_size=2))\n"
              "config = contrib_tpu.RunConfig(tpu_config=contrib_tpu.TPUConfig(iterations_per_loop=2))\n")
    notes = {use.name: (use.status, use.note) for use in check.check_source(source, "modeling.py")}
    assert notes["tf.contrib.layers.layer_norm"][0] == compatibility.REFUSED
    assert "compat.estimator.contrib_layers.layer_norm" in notes["tf.contrib.layers.layer_norm"][1]
    fixed = check.fixed_source(source, "modeling.py")
    assert "from compat.estimator import contrib_layers\n" in fixed and "tensorflow.contrib" not in fixed
    assert "tf.data.experimental.map_and_batch(" in fixed and "tf.compat.v1.estimator.tpu.RunConfig(" in fixed
    statuses = {use.name: use.status for use in check.check_source(fixed, "modeling.py")}
    assert statuses == {"tf.compat.v1.estimator.tpu.RunConfig": compatibility.SAME,
                        "tf.compat.v1.estimator.tpu.TPUConfig": compatibility.SAME}, statuses
    (tmp_path / "modeling.py").write_text(fixed)
    program = ("import modeling, numpy as np, tensorflow as tf\n"
               "x = np.array([[1.0, 2.0, 4.0, 9.0], [3.0, 3.0, 3.0, 7.0]], np.float32)\n"
               "with tf.Graph().as_default():\n"
               "    with tf.compat.v1.variable_scope('bert/embeddings'):\n"
               "        inputs = tf.compat.v1.placeholder(tf.float32, [None, 4])\n"
               "        y = modeling.norm(inputs)\n"
               "    names = sorted(v.name for v in tf.compat.v1.trainable_variables())\n"
               "    with tf.compat.v1.Session() as session:\n"
               "        session.run(tf.compat.v1.global_variables_initializer())\n"
               "        got = session.run(y, {inputs: x})\n"
               "want = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-12)\n"
               "print(names, float(np.abs(got - want).max()))\n")
    ran = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), REPO])})
    assert ran.returncode == 0, ran.stderr[-3000:]
    names, difference = ran.stdout.strip().splitlines()[-1].rsplit(" ", 1)
    assert names == "['bert/embeddings/LayerNorm/beta:0', 'bert/embeddings/LayerNorm/gamma:0']"
    assert float(difference) < 1e-5


def test_contrib_layers_this_project_lacks_come_from_tf_slim_and_dotted_layer_norm_from_here():
    """A file taking a name this project lacks from tf.contrib.layers (`fully_connected`) imports tf-slim's module,
    which has them all; `tf.contrib.layers.layer_norm` spelled out gets this project's, imported beside TensorFlow."""
    module_import = ("import tensorflow as tf\n"
                     "from tensorflow.contrib import layers as contrib_layers\n"
                     "def net(x):\n"
                     "    return contrib_layers.layer_norm(contrib_layers.fully_connected(x, 4))\n")
    fixed = check.fixed_source(module_import, "net.py")
    assert "from tf_slim import layers as contrib_layers\n" in fixed and "tensorflow.contrib" not in fixed
    notes = {use.name: use.note for use in check.check_source(module_import, "net.py")}
    assert "tf_slim.layers.fully_connected" in notes["tf.contrib.layers.fully_connected"]
    dotted = ("import tensorflow as tf\n\n\ndef norm(x):\n"
              "    return tf.contrib.layers.fully_connected(tf.contrib.layers.layer_norm(x, scope='ln'), 4)\n")
    fixed = check.fixed_source(dotted, "norm.py")
    assert fixed.splitlines()[:3] == ["import tensorflow as tf", "from compat.estimator import contrib_layers",
                                      "import tf_slim"]
    assert "return tf_slim.layers.fully_connected(contrib_layers.layer_norm(x, scope='ln'), 4)" in fixed
    assert check.FIX_COMMENT not in fixed


def test_each_tf_contrib_name_says_where_fix_takes_it_or_what_to_write_instead(tmp_path):
    """A tf.contrib name with a TF 2 home says --fix moves it there; one without says what to write instead; and
    --fix says "pip install tf-slim" only of a file it made import tf_slim, not of one whose comments name it."""
    source = ("import tensorflow as tf\n"
              "from tensorflow.contrib import layers as cl\n"
              "HPARAMS = tf.contrib.training.HParams(units=4)\n"
              "def net(ids, x):\n"
              "    cell = tf.contrib.rnn.LSTMCell(4)\n"
              "    return cl.embed_sequence(ids, vocab_size=9, embed_dim=2), cl.fully_connected(x, 4), cell\n")
    notes = {use.name: use.note for use in check.check_source(source, "net.py")}
    assert "--fix rewrites it to tf.compat.v1.nn.rnn_cell.LSTMCell" in notes["tf.contrib.rnn.LSTMCell"]
    assert "a dict as the Estimator's params" in notes["tf.contrib.training.HParams"]
    assert "tf.nn.embedding_lookup" in notes["tf.contrib.layers.embed_sequence"]
    program = tmp_path / "net.py"
    program.write_text(source)
    fixed = subprocess.run([*CHECK, "--fix", str(program)], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert fixed.returncode == 1 and f"fixed {program}" in fixed.stdout  # HParams and embed_sequence need a person
    text = program.read_text()
    assert "tf.compat.v1.nn.rnn_cell.LSTMCell(4)" in text
    assert not [line for line in text.splitlines() if line.startswith(("from tensorflow.contrib", "import tensorflow.c"))]
    assert 'cl = unavailable("tf.contrib.layers")' in text  # a name with no home: the file imports, its use stops
    assert "tf_slim" in text and "imports tf_slim now" not in fixed.stdout  # named in a comment, not imported


@pytest.mark.slow
def test_bert_fine_tunes_after_fix_alone_as_tf_2_15_did_after_its_upgrader_and_hand_edits(tmp_path):
    """google-research/bert as packaged (bert-tensorflow 1.0.4), the most copied TPUEstimator program: its modules
    copied, `check --fix` run on them and nothing else changed, a tiny BERT fine-tunes through its own
    model_fn_builder and input_fn_builder under TPUEstimator(use_tpu=False) and matches TF 2.15 running the same
    after its tf_upgrade_v2 and the hand edits it needed (tests/helpers/tf215_bert.py): the loss at each step,
    the checkpoint's variables with AdamWeightDecayOptimizer's slots, the evaluation and the predictions."""
    sys.path.insert(0, os.path.join(REPO, "tests", "helpers"))
    import libraries

    try:
        checkout = libraries.copy_of_bert(str(tmp_path / "checkout"))
    except libraries.IndexUnreachable as error:
        pytest.skip(f"the package index is unreachable: {error}")
    fixed = subprocess.run([*CHECK, "--fix", "bert"], capture_output=True, text=True, cwd=checkout, timeout=600)
    assert fixed.returncode == 0, fixed.stdout[-3000:] + fixed.stderr[-3000:]  # nothing left for a person
    assert "fixed bert/modeling.py" in fixed.stdout and "tensorflow.contrib" not in (
        tmp_path / "checkout" / "bert" / "modeling.py").read_text()
    workdir = tmp_path / "work"
    workdir.mkdir()
    ran = subprocess.run([sys.executable, os.path.join(REPO, "tests", "helpers", "bert_finetune.py"), "--bert",
                          checkout, "--workdir", str(workdir)], capture_output=True, text=True, cwd=workdir,
                         timeout=600, env={**os.environ, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert ran.returncode == 0, ran.stderr[-3000:]
    ours = json.loads(ran.stdout.strip().splitlines()[-1])
    recorded = json.load(open(os.path.join(REPO, "tests", "data", "tf215_bert.json")))
    assert ours["variables"] == recorded["variables"] and ours["checkpoint"] == recorded["checkpoint"]
    assert ours["eval"]["global_step"] == recorded["eval"]["global_step"] == 30
    assert ours["eval"]["eval_accuracy"] == recorded["eval"]["eval_accuracy"] == 1.0  # it learned, on both
    assert ours["losses"] == pytest.approx(recorded["losses"], abs=1e-4)
    assert ours["eval"]["eval_loss"] == pytest.approx(recorded["eval"]["eval_loss"], abs=1e-5)
    assert sum(ours["probabilities"], []) == pytest.approx(sum(recorded["probabilities"], []), abs=1e-5)


def test_names_taken_from_tf_2_15_module_paths_are_judged_by_whether_they_resolve_when_run(tmp_path):
    """`from tensorflow_estimator.python.estimator.canned import dnn`, then `dnn._dnn_model_fn`: what the check
    calls "as TF 2.15" resolves when the program runs after install(), and what it refuses does not."""
    taken = {
        "tensorflow_estimator.python.estimator.canned.dnn": ["_dnn_model_fn", "_add_hidden_layer_summary"],
        "tensorflow_estimator.python.estimator.estimator": ["_load_global_step_from_checkpoint_dir", "Estimator"],
        "tensorflow.python.estimator.canned.optimizers": ["get_optimizer_instance"],
    }
    lines = ["import compat.estimator; compat.estimator.install()", "import importlib"]
    for number, (module, names) in enumerate(taken.items()):
        package, _, leaf = module.rpartition(".")
        lines.append(f"from {package} import {leaf} as module_{number}")
        lines += [f"module_{number}.{name}" for name in names]
    source = "\n".join(lines) + "\n"
    asked = {f"{module}.{name}" for module, names in taken.items() for name in names}
    verdicts = {use.name: use.status for use in check.check_source(source, "uses.py") if use.name in asked}
    assert set(verdicts) == asked
    assert verdicts["tensorflow_estimator.python.estimator.estimator._load_global_step_from_checkpoint_dir"] == \
        compatibility.REFUSED
    program = ("import compat.estimator, importlib, json, sys\ncompat.estimator.install()\nfound = {}\n"
               "for dotted in sys.argv[1:]:\n"
               "    module, name = dotted.rsplit('.', 1)\n"
               "    try:\n"
               "        getattr(importlib.import_module(module), name)\n"
               "        found[dotted] = True\n"
               "    except (AttributeError, ImportError):\n"
               "        found[dotted] = False\n"
               "print(json.dumps(found))\n")
    ran = subprocess.run([sys.executable, "-c", program, *sorted(asked)], capture_output=True, text=True, cwd=REPO,
                         timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    resolved = json.loads(ran.stdout.strip().splitlines()[-1])
    assert resolved == {name: verdicts[name] == compatibility.SAME for name in asked}


@pytest.mark.slow
def test_albert_fine_tunes_and_reports_its_sts_b_metrics_after_fix_alone(tmp_path):
    """google-research/albert as packaged (albert-tensorflow 1.1): `check --fix` alone leaves no tf.contrib import
    (its STS-B metrics' `streaming_pearson_correlation` and `streaming_concat` find their home here), and a tiny
    ALBERT fine-tunes through its own model_fn_builder under TPUEstimator(use_tpu=False); the evaluation's streaming
    metrics are TF 1.x's: the concatenated predictions and labels, their Pearson correlation and mean squared
    error, as computed from the predictions themselves (tests/helpers/albert_sts_b.py)."""
    sys.path.insert(0, os.path.join(REPO, "tests", "helpers"))
    import libraries

    try:
        checkout = libraries.copy_of_package(libraries.ALBERT, "albert", str(tmp_path / "checkout"))
        sentencepiece = libraries.install(libraries.ALBERT)
    except libraries.IndexUnreachable as error:
        pytest.skip(f"the package index is unreachable: {error}")
    fixed = subprocess.run([*CHECK, "--fix", "albert"], capture_output=True, text=True, cwd=checkout, timeout=600)
    assert fixed.returncode == 0, fixed.stdout[-3000:] + fixed.stderr[-3000:]  # nothing left for a person
    for module in (tmp_path / "checkout" / "albert").glob("*.py"):
        assert "tensorflow.contrib" not in module.read_text(), module.name
    assert "from compat.estimator import contrib_metrics" in (
        tmp_path / "checkout" / "albert" / "classifier_utils.py").read_text()
    workdir = tmp_path / "work"
    workdir.mkdir()
    ran = subprocess.run([sys.executable, os.path.join(REPO, "tests", "helpers", "albert_sts_b.py"), "--albert",
                          checkout, "--workdir", str(workdir)], capture_output=True, text=True, cwd=workdir,
                         timeout=600, env={**os.environ, "PYTHONPATH": os.pathsep.join([REPO, sentencepiece]),
                                           "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert ran.returncode == 0, ran.stderr[-3000:]
    ours = json.loads(ran.stdout.strip().splitlines()[-1])
    predictions, labels, metrics = np.array(ours["predictions"]), np.array(ours["labels"]), ours["metrics"]
    assert metrics["global_step"] == 12 and len(predictions) == len(labels) == 32
    np.testing.assert_allclose(metrics["pred"], predictions[:, None] if np.ndim(metrics["pred"]) == 2
                               else predictions, atol=1e-5)
    np.testing.assert_allclose(metrics["label_ids"], labels, atol=1e-6)
    assert metrics["pearson"] == pytest.approx(np.corrcoef(predictions, labels)[0, 1], abs=1e-4)
    assert metrics["MSE"] == pytest.approx(np.mean((predictions - labels) ** 2), rel=1e-4)


def test_fix_leaves_a_file_importable_when_a_contrib_name_has_no_home(tmp_path):
    """A tf.contrib module or name with no home in TensorFlow 2, here or in tf-slim, no longer keeps a
    `tensorflow.contrib` import alive: --fix binds a stand-in, with the check's comment above it and above each
    use, so the file imports and runs, and only a use stops, naming the name; the check still reports the uses,
    and a second --fix changes nothing."""
    program = tmp_path / "program.py"
    program.write_text(
        "import tensorflow as tf\n"
        "from tensorflow.contrib import learn as contrib_learn\n"
        "from tensorflow.contrib.training import HParams\n\n\n"
        "def rarely_run():\n"
        "    return contrib_learn.Experiment(None, None, None)\n\n\n"
        "def main():\n"
        "    return int(tf.constant(2)) + 1\n\n\n"
        "if __name__ == '__main__':\n"
        "    print(main())\n"
    )
    assert check.main([str(program), "--fix"]) == 1  # uses something refused: what needs a person
    fixed = program.read_text()
    assert "tensorflow.contrib" not in fixed
    assert fixed.count(check.FIX_COMMENT + "tf.contrib.learn:") == 1  # above the stand-in
    assert check.FIX_COMMENT + "tf.contrib.learn.Experiment" in fixed  # above the use
    assert "HParams has no home: pass a dict" in fixed  # the check's own words on the name
    env = {**os.environ, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "2"}
    ran = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode == 0 and ran.stdout.strip() == "3", ran.stderr[-2000:]
    used = subprocess.run([sys.executable, "-c", "import program; program.rarely_run()"], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path, env=env)
    assert "ContribUnavailableError: tf.contrib.learn.Experiment: tf.contrib is not in TensorFlow 2" in used.stderr
    assert {use.name for use in check.check_source(fixed) if use.status == compatibility.REFUSED} >= {
        "tf.contrib.learn.Experiment", "tf.contrib.training.HParams"}
    check.main([str(program), "--fix"])
    assert program.read_text() == fixed
    starred = tmp_path / "starred.py"  # a star import binds no name for a stand-in: left, and the run goes on
    starred.write_text("import tensorflow as tf\nfrom tensorflow.contrib.framework import *\n")
    other = tmp_path / "other.py"
    other.write_text("import tensorflow as tf\ntf.logging.info('x')\n")
    check.main([str(starred), str(other), "--fix"])
    assert "from tensorflow.contrib.framework import *" in starred.read_text()
    assert "tf.compat.v1.logging.info" in other.read_text()
