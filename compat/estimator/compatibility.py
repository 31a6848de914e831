"""What runs as TF 2.15, what runs with a difference, and what is refused: one table, kept with the code.

    python -m compat.estimator.compatibility [--markdown]    the table (docs/compatibility.md is its Markdown)

Every public name of TF 2.15's `tf.estimator` and `tf.compat.v1.estimator`
(compat/estimator/tf215_names.json lists the 157), and the TensorFlow and
Keras names Estimator programs lean on (`tf.compat.v1.layers`,
`tf.keras.estimator`, `tf.contrib`, ...), has a row: its status and, unless it
runs as TF 2.15, how it differs or what to use instead. `lookup()` answers for
any dotted name (below `tf.`), by the longest prefix the table has; the
migration check (`python -m compat.estimator.check`, check.py) reads the same
table, and tests/test_compatibility.py keeps the table, the code and the
document in step.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys

from compat.estimator.canned import V1_CLASSES

SAME = "as TF 2.15"
DIFFERS = "differs"
REFUSED = "refused"
UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True)
class Case:
    """A difference a program meets only when it uses one of `uses`: names below `tf.` (by prefix,
    `keras.layers.`) or keyword arguments (`train_distribute=`)."""

    uses: tuple[str, ...]
    note: str


@dataclasses.dataclass(frozen=True)
class Entry:
    """A name's status and note; with `cases`, the name runs as TF 2.15 for a program that uses none of
    the cases' names, and differs as their notes say for one that does."""

    status: str
    note: str = ""
    cases: tuple[Case, ...] = ()

    def described(self) -> str:
        """The note and every case, for the table."""
        return "; ".join([self.note] * bool(self.note) + [case.note for case in self.cases])

    def in_program(self, uses: frozenset[str]) -> Entry:
        """The row as a program meets it that uses `uses` (names below `tf.`, and `keyword=` names)."""
        if not self.cases:
            return self
        met = [case.note for case in self.cases if any(use.startswith(case.uses) for use in uses)]
        if not met and not self.note:
            return Entry(SAME)
        return Entry(self.status, "; ".join([self.note] * bool(self.note) + met))


_KERAS_ENGINE = (
    "trains the Keras 3 model (a Keras 2 model as its Keras 3 copy) eagerly (many steps per call); "
    "object-based checkpoints keyed as TF 2.15's (weights, optimizer slots, hyperparameters, global "
    "step: its folders restore); Keras 3's Nadam updates otherwise than Keras 2's; no .meta or "
    "graph.pbtxt; SessionRunHooks that need a Session are refused with their replacement"
)
# What makes a program one that calls Keras layers (an initializer or an optimizer of tf.keras does not)
_KERAS_LAYERS = ("keras.layers.", "keras.Sequential", "keras.Model", "keras.models.", "keras.applications.")
_V1_CANNED = "the TF 1.x class: tf.compat.v1.train optimizers, SUM loss reduction, TF 1.x variable and slot names"

# tf.compat.v1.train's names that TensorFlow 2's tf.train lacks (listed from TF 2.21): a TF 1.x program that
# reaches them as `tf.train.<name>` with `import tensorflow as tf` fails on any TensorFlow 2
_TF1_ONLY_TRAIN = (
    "AdadeltaOptimizer",
    "AdagradDAOptimizer",
    "AdagradOptimizer",
    "AdamOptimizer",
    "CheckpointSaverHook",
    "CheckpointSaverListener",
    "ChiefSessionCreator",
    "FeedFnHook",
    "FinalOpsHook",
    "FtrlOptimizer",
    "GlobalStepWaiterHook",
    "GradientDescentOptimizer",
    "LoggingTensorHook",
    "LooperThread",
    "MomentumOptimizer",
    "MonitoredSession",
    "MonitoredTrainingSession",
    "NanLossDuringTrainingError",
    "NanTensorHook",
    "NewCheckpointReader",
    "Optimizer",
    "ProfilerHook",
    "ProximalAdagradOptimizer",
    "ProximalGradientDescentOptimizer",
    "QueueRunner",
    "RMSPropOptimizer",
    "Saver",
    "SaverDef",
    "Scaffold",
    "SecondOrStepTimer",
    "Server",
    "SessionCreator",
    "SessionManager",
    "SessionRunArgs",
    "SessionRunContext",
    "SessionRunHook",
    "SessionRunValues",
    "SingularMonitoredSession",
    "StepCounterHook",
    "StopAtStepHook",
    "SummarySaverHook",
    "Supervisor",
    "SyncReplicasOptimizer",
    "VocabInfo",
    "WorkerSessionCreator",
    "add_queue_runner",
    "assert_global_step",
    "basic_train_loop",
    "batch",
    "batch_join",
    "checkpoint_exists",
    "cosine_decay",
    "cosine_decay_restarts",
    "create_global_step",
    "do_quantize_training_on_graphdef",
    "exponential_decay",
    "export_meta_graph",
    "generate_checkpoint_state_proto",
    "get_checkpoint_mtimes",
    "get_global_step",
    "get_or_create_global_step",
    "global_step",
    "import_meta_graph",
    "init_from_checkpoint",
    "input_producer",
    "inverse_time_decay",
    "limit_epochs",
    "linear_cosine_decay",
    "match_filenames_once",
    "maybe_batch",
    "maybe_batch_join",
    "maybe_shuffle_batch",
    "maybe_shuffle_batch_join",
    "natural_exp_decay",
    "noisy_linear_cosine_decay",
    "piecewise_constant",
    "piecewise_constant_decay",
    "polynomial_decay",
    "queue_runner",
    "range_input_producer",
    "remove_checkpoint",
    "replica_device_setter",
    "sdca_fprint",
    "sdca_optimizer",
    "sdca_shrink_l1",
    "shuffle_batch",
    "shuffle_batch_join",
    "slice_input_producer",
    "start_queue_runners",
    "string_input_producer",
    "summary_iterator",
    "update_checkpoint_state",
    "warm_start",
    "write_graph",
)

# What a program that replicates its model_fn uses (see Case)
_DISTRIBUTED = ("train_distribute=", "eval_distribute=", "distribute.", "compat.v1.distribute.")

# Exact names (below `tf.`) and prefixes (ending in "."), for both namespaces where both had the name.
_ROWS: dict[str, Entry] = {
    # -- the Estimator and its specs
    "estimator.Estimator": Entry(
        DIFFERS,
        cases=(
            Case(
                _KERAS_LAYERS,
                "Keras 3 layers called in a model_fn without training= follow the mode and "
                "update their state every step (TF 2.15 ran them in inference mode and never "
                "updated them)",
            ),
            Case(
                _DISTRIBUTED,
                "under train_distribute/eval_distribute (MirroredStrategy, MultiWorkerMirroredStrategy) "
                "it replicates the model_fn as TF 2.15 did, without the extra inter-op threads and "
                "ReductionToOneDevice TF 2.15 needed on a 2-core machine; other strategies of several replicas "
                "are refused when the Estimator is made",
            ),
        ),
    ),
    "estimator.RunConfig": Entry(
        DIFFERS,
        cases=(
            Case(
                ("tf_random_seed=",),
                "tf_random_seed also seeds the initializers a model_fn makes without a seed (tf.compat.v1.layers' "
                "and Keras layers' defaults), so two runs with the same seed and data give the same weights and "
                "metrics; TF 2.15's started from different weights whatever the seed",
            ),
            Case(
                _DISTRIBUTED,
                "with train_distribute in a cluster, the task's properties come from TF_CONFIG (TF 2.15 left "
                "them to its distribute coordinator; as there, an evaluator's is_chief is True)",
            ),
        ),
    ),
    "estimator.train_and_evaluate": Entry(
        DIFFERS,
        "clusters with ps tasks train asynchronously as in TF 2.15 on model_fn and canned Estimators, and on "
        "model_to_estimator's through a ParameterServerStrategy (the chief coordinates, exact step count); a restart "
        "after max_steps trains no extra step and returns (None, None)",
    ),
    "estimator.CheckpointSaverHook": Entry(
        SAME, "on model_to_estimator Estimators refused: use RunConfig(save_checkpoints_steps=...)"
    ),
    "estimator.SummarySaverHook": Entry(
        SAME, "on model_to_estimator Estimators refused: use RunConfig(save_summary_steps=...)"
    ),
    "estimator.ProfilerHook": Entry(
        SAME, "on model_to_estimator Estimators refused: use keras.callbacks.TensorBoard(profile_batch=...)"
    ),
    "estimator.experimental.InMemoryEvaluatorHook": Entry(SAME, "graph-engine Estimators only (model_fn, canned)"),
    "estimator.add_metrics": Entry(
        SAME,
        "Estimators with a model_fn; a model_to_estimator Estimator is refused: add "
        "the metric to model.compile(metrics=...)",
    ),
    # (tf.compat.v1.estimator's canned classes: _canned_rows(), below)
    "compat.v1.estimator.experimental.dnn_logit_fn_builder": Entry(SAME, "TF 1.x's: tf.compat.v1.layers variables"),
    "compat.v1.estimator.experimental.linear_logit_fn_builder": Entry(SAME, "TF 1.x's: tf.compat.v1 linear model"),
    "compat.v1.estimator.experimental.KMeans": Entry(
        SAME, "TensorFlow's own clustering kernels; mini-batch runs are not bit-reproducible, as in TF 2.15"
    ),
    "estimator.experimental.LinearSDCA": Entry(SAME, "TensorFlow's own SDCA kernels; TF2 feature columns"),
    "estimator.experimental.RNNClassifier": Entry(
        DIFFERS,
        "Keras 2 (tf_keras) layers, as TF 2.15 built it; an rnn_cell_fn's tf.keras cells (Keras 3's) are made "
        "again as their Keras 2 twins, a custom Keras 3 cell runs as it is (its initial weights from Keras 3's "
        "generator, not tf_random_seed, so its runs differ); an optimizer of the wrong type is "
        "refused when the estimator is made (TF 2.15: at train, with the same message)",
    ),
    "estimator.experimental.RNNEstimator": Entry(
        DIFFERS,
        "Keras 2 (tf_keras) layers, as TF 2.15 built it; an rnn_cell_fn's tf.keras cells (Keras 3's) are made "
        "again as their Keras 2 twins, a custom Keras 3 cell runs as it is (its initial weights from Keras 3's "
        "generator, not tf_random_seed, so its runs differ); an optimizer of the wrong type is "
        "refused when the estimator is made (TF 2.15: at train, with the same message)",
    ),
    # -- TPU
    "estimator.tpu.TPUEstimator": Entry(
        DIFFERS,
        "use_tpu=False only (CPU and GPU, as TF 2.15 ran it there); with use_tpu=True TF 2.15's argument checks "
        "run, then train, evaluate and predict are refused where a TPU would start",
    ),
    "estimator.tpu.experimental.EmbeddingConfigSpec": Entry(
        REFUSED, "TPU embeddings have no meaning off a TPU: use tf.feature_column.embedding_column"
    ),
    # -- beyond tf.estimator: names Estimator programs use
    "keras.estimator.model_to_estimator": Entry(DIFFERS, _KERAS_ENGINE),
    "keras.layers.DenseFeatures": Entry(DIFFERS, "a Keras 3 layer over TensorFlow's feature columns (after install())"),
    "keras.optimizers.legacy.": Entry(
        DIFFERS,
        "after install(): Keras 3's optimizer of the same name (one warning); "
        "`Optimizer` is tf_keras' OptimizerV2 base class",
    ),
    "compat.v1.layers.": Entry(
        SAME, "tf_keras' legacy layers (TensorFlow's own route under Keras 2), after importing compat.estimator"
    ),
    "layers.": Entry(
        REFUSED,
        "a TF 1.x name, not in TensorFlow 2 (nor in TF 2.15): use tf.compat.v1.layers.<name> (or import "
        "tensorflow.compat.v1 as tf), tf_keras' legacy layers after importing compat.estimator",
    ),
    "nn.rnn_cell.": Entry(
        REFUSED,
        "a TF 1.x name, not in TensorFlow 2: use tf.compat.v1.nn.rnn_cell.<name> (or import "
        "tensorflow.compat.v1 as tf)",
    ),
    "compat.v1.nn.rnn_cell.": Entry(SAME, "tf_keras' legacy cells, after importing compat.estimator"),
    "compat.v1.train.": Entry(SAME, "TensorFlow's own"),
    "train.": Entry(SAME, "TensorFlow's own"),
    "compat.v1.losses.": Entry(SAME, "TensorFlow's own"),
    "compat.v1.metrics.": Entry(SAME, "TensorFlow's own"),
    "compat.v1.summary.": Entry(SAME, "TensorFlow's own"),
    "compat.v1.data.": Entry(
        SAME,
        "TensorFlow's own; make_one_shot_iterator(...).get_next() in an input_fn is read "
        "as its dataset by model_to_estimator Estimators",
    ),
    "feature_column.": Entry(SAME, "TensorFlow's own"),
    "compat.v1.feature_column.": Entry(SAME, "TensorFlow's own"),
    "estimator.BoostedTreesClassifier": Entry(
        REFUSED,
        "removed from tensorflow_estimator before 2.15: use TensorFlow Decision Forests or a DNN/Linear estimator",
    ),
    "estimator.BoostedTreesRegressor": Entry(
        REFUSED,
        "removed from tensorflow_estimator before 2.15: use TensorFlow Decision Forests or a DNN/Linear estimator",
    ),
    # tf.contrib names with no TF 2 home that TF 2.15's upgrader or --fix knows: what to write instead
    "contrib.training.HParams": Entry(
        REFUSED,
        "tf.contrib is not in TensorFlow 2, and HParams has no home: pass a dict as the Estimator's params, or a "
        "types.SimpleNamespace where the model_fn reads params.<name>",
    ),
    "contrib.layers.optimize_loss": Entry(
        REFUSED,
        "tf.contrib is not in TensorFlow 2, and optimize_loss has no home: use "
        "tf.compat.v1.train.<Name>Optimizer(learning_rate).minimize(loss, global_step=...)",
    ),
    "contrib.layers.embed_sequence": Entry(
        REFUSED,
        "tf.contrib is not in TensorFlow 2, and embed_sequence has no home: use tf.nn.embedding_lookup on "
        "tf.compat.v1.get_variable('embeddings', [vocab_size, embed_dim]) under variable_scope('EmbedSequence'), "
        "its TF 1.x variable name",
    ),
    "contrib.": Entry(
        REFUSED,
        "tf.contrib is not in TensorFlow 2, and this name has no TF 2 home that TF 2.15's upgrader or --fix knows, "
        "nor one here, nor in tf-slim: replace it by hand (docs/migration.md lists the homes --fix knows)",
    ),
    "estimator.": Entry(SAME),
    "compat.v1.estimator.": Entry(SAME),
}


def _canonical(dotted: str) -> str:
    """`tf.compat.v1.estimator.X` and `tf.estimator.X` share a row unless the v1 name has its own."""
    dotted = dotted[3:] if dotted.startswith("tf.") else dotted
    if dotted.startswith("compat.v1.estimator.") and dotted not in _ROWS:
        return "estimator." + dotted[len("compat.v1.estimator.") :]
    return dotted


_TF1_ONLY_TRAIN_ROW = "train.<TF 1.x name>"  # AdamOptimizer, SessionRunHook, get_global_step, Saver, ...
_TF1_ONLY_TRAIN_NOTE = (
    "a TF 1.x name, not in TensorFlow 2 (optimizers, hooks, sessions, savers, queues): use tf.compat.v1.train.{} "
    "(or import tensorflow.compat.v1 as tf)"
)


def lookup(dotted: str) -> Entry:
    """The row for a dotted name below `tf.` (or with it): exact, else the longest prefix, else UNKNOWN."""
    name = _canonical(dotted)
    if name.startswith("train.") and name.split(".")[1] in _TF1_ONLY_TRAIN:
        member = name.split(".")[1]
        return Entry(REFUSED, _TF1_ONLY_TRAIN_NOTE.format(member))
    if name in _ROWS:
        return _ROWS[name]
    if name.startswith("contrib.estimator."):
        moved = contrib_estimator_home(name[len("contrib.estimator.") :])
        if moved:
            return Entry(REFUSED, f"tf.contrib is not in TensorFlow 2: use tf.{moved}")
    if name.startswith("contrib.learn."):
        member = name[len("contrib.learn.") :].split(".")[0]
        if f"estimator.{member}" in _tf215_set():
            return Entry(
                REFUSED,
                f"tf.contrib.learn is not in TensorFlow 2: use tf.estimator.{member}, its successor (its arguments "
                "differ: feature columns from tf.feature_column, an input_fn instead of x and y)",
            )
    prefixes = [key for key in _ROWS if key.endswith(".") and name.startswith(key)]
    return _ROWS[max(prefixes, key=len)] if prefixes else Entry(UNKNOWN)


def contrib_estimator_home(member: str) -> str | None:
    """Where TF 2.15 kept what TF 1.x had as `tf.contrib.estimator.<member>`: `estimator.<member>` or
    `estimator.experimental.<member>` (stop_if_no_decrease_hook, ...), None when it kept neither."""
    for home in (f"estimator.{member}", f"estimator.experimental.{member}"):
        if home in _tf215_set():
            return home
    return None


def tf215_names() -> list[str]:
    """TF 2.15's public tf.estimator and tf.compat.v1.estimator names, as recorded from TF 2.15.1."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "tf215_names.json")
    return json.load(open(path))["names"]


def known_names() -> list[str]:
    """TF 2.15's public names and the table's exact rows, each `tf.`-rooted."""
    return ["tf." + name for name in tf215_names()] + ["tf." + key for key in _ROWS if not key.endswith(".")]


def is_known(dotted: str) -> bool:
    """Whether `dotted` (`tf.`-rooted or not) is one of TF 2.15's public names or an exact row of the table."""
    name = dotted[3:] if dotted.startswith("tf.") else dotted
    return name in _ROWS or name in _tf215_set()


@functools.cache
def _tf215_set() -> frozenset[str]:
    return frozenset(tf215_names())


OWN_NAME = "this toolkit's own name, not TF 2.15's: it runs after compat.estimator.install()"


def _canned_rows() -> dict[str, Entry]:
    """The rows of the classes registered in `canned.CANNED`: the TF 1.x twins of TF 2.15's classes are
    tf.compat.v1.estimator's own; a class TF 2.15 did not have is this toolkit's, in both namespaces."""
    rows = {}
    for name in V1_CLASSES:
        for namespace in ("estimator.", "compat.v1.estimator."):
            if namespace + name not in _tf215_set():
                rows[namespace + name] = Entry(DIFFERS, OWN_NAME)
            elif namespace == "compat.v1.estimator.":
                rows[namespace + name] = Entry(SAME, _V1_CANNED)
    return rows


_ROWS.update(_canned_rows())


def table() -> list[tuple[str, Entry]]:
    """Every TF 2.15 name, then the other names the table knows, with their rows."""
    names = tf215_names()
    rows = [("tf." + name, lookup(name)) for name in names]
    rows.append(("tf." + _TF1_ONLY_TRAIN_ROW, Entry(REFUSED, _TF1_ONLY_TRAIN_NOTE.format("<name>"))))
    rows += [
        ("tf." + key + ("*" if key.endswith(".") else ""), entry)
        for key, entry in _ROWS.items()
        if key not in names and "compat.v1." + key not in names and key not in ("estimator.", "compat.v1.estimator.")
    ]
    return rows


def markdown() -> str:
    rows = table()
    counts = {status: sum(entry.status == status for _, entry in rows) for status in (SAME, DIFFERS, REFUSED)}
    lines = [
        "# Compatibility with TF 2.15's tf.estimator",
        "",
        "Generated by `python -m compat.estimator.compatibility --markdown` from the table in "
        "compat/estimator/compatibility.py (tests/test_compatibility.py keeps them in step). Every public name of "
        "TF 2.15's `tf.estimator` and `tf.compat.v1.estimator`, then names of TensorFlow and Keras that "
        "Estimator programs use (`*`: every name below).",
        "",
        f"{counts[SAME]} as TF 2.15, {counts[DIFFERS]} with a stated difference, {counts[REFUSED]} refused.",
        "",
        "| name | status | how it differs, or what to use |",
        "|---|---|---|",
    ]
    lines += [f"| `{name}` | {entry.status} | {entry.described()} |" for name, entry in rows]
    return "\n".join([*lines, "", *_legacy_modules_markdown()]) + "\n"


# Releases of libraries of 2017-2023 that import TF 2.15's estimator modules by path, found by scanning the
# wheels of about forty TensorFlow libraries (those reaching the Estimator only as `tf.estimator` need nothing
# more). tests/helpers/scan_library_names.py lists what each reaches; tests/test_legacy_modules.py resolves it.
SCANNED_LIBRARIES = (
    "adanet==0.9.0",
    "adanet==0.8.0",
    "analytics-zoo==0.11.2",
    "bigdl-orca==2.4.0",
    "deepctr==0.9.4",
    "deepctr==0.8.3",
    "fedlearner==1.5.dev20210512",
    "keras==2.15.0",
    "tf-keras==2.21.0",
    "tensorflow-lattice==2.0.13",
    "tensorflow-model-analysis==0.21.0",
    "tensorflow-model-analysis==0.30.0",
    "tensorflow-privacy==0.9.0",
)


def _legacy_modules_markdown() -> list[str]:
    """The section on TF 2.15's module paths: each module of tensorflow_estimator 2.15, how many of the names
    it defined resolve after install(), and the ones that do not. Loads TensorFlow (it resolves each name)."""
    from compat.estimator import legacy_modules

    rows = [
        (module, resolved, missing)
        for module, (resolved, missing) in legacy_modules.coverage().items()
        if module.startswith("tensorflow_estimator")
    ]
    resolved_count = sum(len(resolved) for _, resolved, _ in rows)
    total = resolved_count + sum(len(missing) for _, _, missing in rows)
    lines = [
        "## TF 2.15's module paths",
        "",
        "Libraries built on tf.estimator import its modules by path. After `compat.estimator.install()`, every "
        "module of tensorflow_estimator 2.15 imports, and so do TensorFlow 2.15's forwarding copies "
        "`tensorflow.python.estimator.<module>` (the same names as `tensorflow_estimator.python.estimator.<module>`) "
        "and `tensorflow.compat.v1.keras` (tf_keras' TF 1.x API, the Keras 2 that TF 2.15 had there). A name below "
        "resolves to the project's counterpart; a name without one stops the import with one line naming the "
        "closest public name. Names are those each module defined in TF 2.15, private ones included "
        "(tests/helpers/tf215_module_names.py lists them under TF 2.15).",
        "",
        f"{resolved_count} of {total} names resolve, in {len(rows)} modules.",
        "",
        "Every name these libraries reach by those paths resolves, attributes of TF 2.15's classes that their "
        "subclasses use included (tests/test_legacy_modules.py): "
        + ", ".join(spec.replace("==", " ") for spec in SCANNED_LIBRARIES)
        + ". TF Privacy's estimators were also run against TF 2.15's run of the same program "
        "(tests/test_libraries.py).",
        "",
        "| module | names | resolve | without a counterpart |",
        "|---|---|---|---|",
    ]
    for module, resolved, missing in rows:
        absent = ", ".join(f"`{name}`" for name in missing)
        lines.append(f"| `{module}` | {len(resolved) + len(missing)} | {len(resolved)} | {absent} |")
    return lines


def main(argv: list[str]) -> int:
    if "--markdown" in argv:
        sys.stdout.write(markdown())
    elif "--unresolved" in argv:  # > compat/estimator/legacy_unresolved.json
        from compat.estimator import legacy_modules

        sys.stdout.write(json.dumps(legacy_modules.unresolved(), indent=1, sort_keys=True) + "\n")
    else:
        for name, entry in table():
            print(f"{name:65s} {entry.status:11s} {entry.described()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
