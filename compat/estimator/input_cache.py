"""Keeping what a legacy `input_fn` decodes between its calls.

An Estimator calls `input_fn` again for every `train` and every evaluation, so
a pipeline that reads and decodes files does all of that work again each time;
`dataset.cache()` in the input_fn does not help, as the dataset is recreated on
each call. Here the Estimator engines rewrite the Dataset an input_fn returns,
as tf.data's own graph rewrites do, through TensorFlow's public route to a
dataset's graph (`DatasetToGraphV2`, `DatasetFromGraph`):

1. The deterministic prefix: the stages from the source up to the first one
   whose output is not a function of its input alone (a random or stateful op
   in a map, a non-deterministic parallel map, a shuffle, a repeat, a
   py_function, a generator).
2. Stateless element-wise maps right after a run of shuffles and repeats are
   moved before them (a shuffle's order depends on the element count and its
   seeds, never on the values, and a map commutes with a repeat), so a
   decoding map written after `shuffle().repeat()` is cached too and every
   element, in its order, stays what it was.
3. A TensorFlow file cache is put after that prefix. Its first full pass writes
   it in a private, locked temporary folder (`atomic.make_temp_folder`); once
   that pass has finished, the files are published whole under a key of the
   prefix's graph and of the size and modification time of every file named
   in it, and later epochs and later calls of the same input_fn replay them.
   A pass cut short (a `train(steps=...)` ending mid-epoch, a kill) publishes
   nothing, so no part-written cache is ever read.

The cache lives on disk, so it holds no memory of its own (the OS keeps what
fits in its page cache): in a temporary folder removed when the process ends,
or, given a folder, there for later processes. It is on by default;
`RunConfig(input_cache=False)` or `COMPAT_INPUT_CACHE=0` turns it off, and
`RunConfig(input_cache=FOLDER)` or `COMPAT_INPUT_CACHE=FOLDER` keeps it. What a program's RunConfig says
wins; the environment variable decides for programs whose RunConfig says nothing (every TF 2.15 program),
so an operator turns the cache off or keeps it without editing them.

The process's caches are `PROCESS_CACHES`' (an `InputCaches`): one per settings, shared by the Estimators
made afresh for each call of a search loop, closed together at the process's end (or by `close()`).
"""

from __future__ import annotations

import atexit
import dataclasses
import hashlib
import os
import re
import shutil
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterable

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import function_pb2, graph_pb2, node_def_pb2

from compat.core import atomic, tf_internals

ENVIRONMENT_VARIABLE = "COMPAT_INPUT_CACHE"
_OFF = {"0", "off", "false", "no"}
_ON = {"1", "on", "true", "yes"}
_CACHE_FILE = "cache"  # TensorFlow writes cache.index and cache.data-*
# The cache is written only where it fits with room to spare: a full disk must stop no training run.
# Its size is not known before it is written; decoded audio or images take a few to ten times the
# bytes of their files, so it needs 1 GB and ten times the named files' bytes free, and sources of
# more than 5 GB of files (ImageNet-sized) are left to the user's own cache.
_MIN_FREE_BYTES = 1 << 30
_EXPANSION = 10
_MAX_SOURCE_BYTES = 5 << 30
# Serialised graphs above this size (large in-memory arrays) are left alone: copying them costs more than it saves.
_MAX_GRAPH_BYTES = 256 << 20

_DATASET_OP = re.compile(r"Dataset(V\d)?$")
# Stages whose output is a function of their input alone, given their functions are stateless.
_SOURCES = {
    "TensorSliceDataset",
    "TensorDataset",
    "RangeDataset",
    "TFRecordDataset",
    "TFRecordDatasetV2",
    "TextLineDataset",
    "FixedLengthRecordDataset",
    "FixedLengthRecordDatasetV2",
}
_ELEMENTWISE = {"MapDataset", "ParallelMapDataset", "ParallelMapDatasetV2"}
_DETERMINISTIC = (
    _SOURCES
    | _ELEMENTWISE
    | {
        "FilterDataset",
        "BatchDataset",
        "BatchDatasetV2",
        "PaddedBatchDataset",
        "PaddedBatchDatasetV2",
        "UnbatchDataset",
        "TakeDataset",
        "SkipDataset",
        "FlatMapDataset",
        "InterleaveDataset",
        "ParallelInterleaveDatasetV2",
        "ParallelInterleaveDatasetV3",
        "ParallelInterleaveDatasetV4",
        "PrefetchDataset",
        "MaxIntraOpParallelismDataset",
        "PrivateThreadPoolDataset",
    }
)
# Stages that only reorder or repeat elements: a stateless map commutes with them.
_ORDER_ONLY = {"ShuffleDataset", "ShuffleDatasetV2", "ShuffleDatasetV3", "RepeatDataset"}
# Stages worth caching after: they read or compute something.
_WORK = (
    (_SOURCES - {"TensorSliceDataset", "TensorDataset", "RangeDataset"})
    | _ELEMENTWISE
    | {
        "FilterDataset",
        "FlatMapDataset",
        "InterleaveDataset",
        "ParallelInterleaveDatasetV2",
        "ParallelInterleaveDatasetV3",
        "ParallelInterleaveDatasetV4",
    }
)


@dataclasses.dataclass(frozen=True)
class InputCacheSettings:
    """Whether an Estimator caches its input_fns' deterministic prefixes, and where.

    `folder` None: a temporary folder of this process, removed at its end.
    """

    enabled: bool = True
    folder: str | None = None


def settings_from(value: bool | str | os.PathLike | None) -> InputCacheSettings:
    """The settings from RunConfig's `input_cache` (True, False or a folder); where it is None (the program
    said nothing), `COMPAT_INPUT_CACHE` (0/off, 1/on, or a folder) when set, else on."""
    environment = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if value is None and environment:
        value = False if environment.lower() in _OFF else True if environment.lower() in _ON else environment
    if value is None or value is True:
        return InputCacheSettings()
    if value is False:
        return InputCacheSettings(enabled=False)
    return InputCacheSettings(folder=os.path.abspath(os.fspath(value)))


@dataclasses.dataclass(frozen=True)
class Plan:
    """Where the cache goes in one dataset's graph: after `prefix[-1]`, with `hoisted` maps moved from after
    `reordering` (shuffles and repeats) to before the cache."""

    prefix: tuple[str, ...]
    hoisted: tuple[str, ...]
    reordering: tuple[str, ...]


# -- reading a dataset's graph -------------------------------------------------------------------


def dataset_graph(dataset: tf.data.Dataset) -> graph_pb2.GraphDef:
    """The graph of `dataset`, eager or built in a graph (the graph engine's input_fns), where a throwaway
    session serialises it; shuffles' seed generators stay as handles to this process's resources."""
    variant = tf_internals.dataset_variant(dataset)
    if tf.executing_eagerly():
        serialized = tf.raw_ops.DatasetToGraphV2(
            input_dataset=variant, external_state_policy=0, strip_device_assignment=True
        ).numpy()
    else:
        # Only the dataset's own ops, in a graph of their own: a session over the whole graph (the model, its
        # summaries, the iterator) runs TensorFlow's type inference on all of it, which printed a 50-line
        # "Type inference failed" dump for ops of the program's that TF 2.15 never checked. Recorded types are
        # left out, so the dataset ops' are inferred afresh.
        alone = tf_internals.subgraph(variant.graph.as_graph_def(), variant.op.name)
        for node in alone.node:
            node.ClearField("experimental_type")
        with tf.Graph().as_default() as graph:
            (imported,) = tf.graph_util.import_graph_def(alone, return_elements=[variant.name], name="")
            tensor = tf.raw_ops.DatasetToGraphV2(
                input_dataset=imported, external_state_policy=0, strip_device_assignment=True
            )
        with tf.compat.v1.Session(graph=graph) as session:
            serialized = session.run(tensor)
    return graph_pb2.GraphDef.FromString(serialized)


def _functions_used(attrs: Iterable) -> list[str]:
    names: list[str] = []
    for value in attrs:
        if value.HasField("func"):
            names.append(value.func.name)
        names.extend(function.name for function in value.list.func)
    return names


def _stateless(function_names: Iterable[str], library: dict, seen: set[str]) -> bool:
    """Whether every op the functions run (and the functions they call) is stateless."""
    for name in function_names:
        if name in seen:
            continue
        seen.add(name)
        function = library.get(name)
        if function is None:
            return False
        for node in function.node_def:
            if node.op in library:
                called = [node.op]
            else:
                op = tf_internals.op_def(node.op)
                if op is None or op.is_stateful:
                    return False
                called = []
            if not _stateless(called + _functions_used(node.attr.values()), library, seen):
                return False
    return True


def _chain(graph: graph_pb2.GraphDef) -> list[node_def_pb2.NodeDef]:
    """The dataset stages from the source to the output, following each stage's first input."""
    nodes = {node.name: node for node in graph.node}
    output = next(node for node in graph.node if node.op == "_Retval")
    chain = []
    name = output.input[0].split(":")[0]
    while name in nodes and _DATASET_OP.search(nodes[name].op):
        chain.append(nodes[name])
        if not nodes[name].input:
            break
        name = nodes[name].input[0].split(":")[0]
    return list(reversed(chain))


def _is_deterministic(node: node_def_pb2.NodeDef, library: dict) -> bool:
    if node.op not in _DETERMINISTIC:
        return False
    if "deterministic" in node.attr and node.attr["deterministic"].s == b"false":
        return False
    return _stateless(_functions_used(node.attr.values()), library, set())


def plan(graph: graph_pb2.GraphDef) -> Plan | None:
    """Where to cache in `graph`, or None when there is no deterministic prefix worth caching."""
    library = {function.signature.name: function for function in graph.library.function}
    chain = _chain(graph)
    if not chain or chain[0].op not in _SOURCES:
        return None
    prefix: list[node_def_pb2.NodeDef] = []
    for node in chain:
        if not _is_deterministic(node, library):
            break
        prefix.append(node)
    rest = chain[len(prefix) :]
    reordering: list[str] = []
    hoisted: list[str] = []
    for node in rest:
        if node.op in _ORDER_ONLY and not hoisted:
            reordering.append(node.name)
        elif node.op in _ELEMENTWISE and reordering and _is_deterministic(node, library):
            hoisted.append(node.name)
        else:
            break
    if not any(node.op in _WORK for node in prefix) and not hoisted:
        return None
    return Plan(tuple(node.name for node in prefix), tuple(hoisted), tuple(reordering))


# -- the key -------------------------------------------------------------------------------------


def _upstream(graph: graph_pb2.GraphDef, last: str) -> list[node_def_pb2.NodeDef]:
    nodes = {node.name: node for node in graph.node}
    seen: dict[str, node_def_pb2.NodeDef] = {}
    pending = [last]
    while pending:
        name = pending.pop().lstrip("^").split(":")[0]
        if name in seen or name not in nodes:
            continue
        seen[name] = nodes[name]
        pending.extend(nodes[name].input)
    return [seen[name] for name in sorted(seen)]


def _function_digests(library: dict) -> dict[str, str]:
    """A digest of each function's body, independent of the unique names TensorFlow gives traced functions."""
    digests: dict[str, str] = {}

    def digest(name: str) -> str:
        if name not in digests:
            digests[name] = "pending"  # recursion guard
            function = function_pb2.FunctionDef()
            function.CopyFrom(library[name])
            function.signature.name = ""
            _rename_functions(function.node_def, digest, library)
            digests[name] = hashlib.sha256(function.SerializeToString(deterministic=True)).hexdigest()
        return digests[name]

    for name in library:
        digest(name)
    return digests


def _rename_functions(nodes: Iterable, rename: Callable[[str], str], library: dict) -> None:
    for node in nodes:
        if node.op in library:
            node.op = rename(node.op)
        for value in node.attr.values():
            if value.HasField("func") and value.func.name in library:
                value.func.name = rename(value.func.name)
            for function in value.list.func:
                if function.name in library:
                    function.name = rename(function.name)


def _strings(nodes: Iterable, library: dict, functions: Iterable[str]) -> list[bytes]:
    """Every string constant in `nodes` and in the bodies of `functions`: the file names a pipeline reads."""
    found: list[bytes] = []
    bodies = [library[name].node_def for name in functions if name in library]
    for group in [nodes, *bodies]:
        for node in group:
            if node.op != "Const" or node.attr["dtype"].type != tf.string.as_datatype_enum:
                continue
            found.extend(_string_values(node.attr["value"].tensor))
    return found


def _string_values(tensor) -> list[bytes]:
    """The strings of a string TensorProto, also in the packed form serialised dataset graphs use
    (`tensor_content`: one varint length per string, then the strings), which `tf.make_ndarray` refuses."""
    if not tensor.tensor_content:
        return list(tensor.string_val)
    count = int(np.prod([dim.size for dim in tensor.tensor_shape.dim]))
    content, position, lengths = tensor.tensor_content, 0, []
    for _ in range(count):
        length, shift = 0, 0
        while True:
            byte = content[position]
            position += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        lengths.append(length)
    values = []
    for length in lengths:
        values.append(content[position : position + length])
        position += length
    return values


def _named_files(strings: Iterable[bytes]) -> list[tuple[str, int, int]]:
    """`(path, size, mtime)` of every string that names a file, so an edited or replaced file gives a new key."""
    files = []
    for value in strings:
        if not 0 < len(value) < 4096:
            continue
        path = os.fsdecode(value)
        try:
            status = os.stat(path)
        except (OSError, ValueError):
            continue
        if os.path.isfile(path):
            files.append((path, status.st_size, status.st_mtime_ns))
    return files


def cache_key(graph: graph_pb2.GraphDef, last: str) -> tuple[str, int]:
    """A digest of the stages up to `last` (their ops, attributes, constants and functions), TensorFlow's
    version, and the files they name; and the bytes of those files."""
    library = {function.signature.name: function for function in graph.library.function}
    digests = _function_digests(library)
    hasher = hashlib.sha256(tf.__version__.encode())
    used: set[str] = set()
    nodes = _upstream(graph, last)
    for original in nodes:
        node = node_def_pb2.NodeDef()
        node.CopyFrom(original)
        node.ClearField("experimental_type")
        if "metadata" in node.attr:  # holds a per-process counter of the datasets made
            del node.attr["metadata"]
        used.update(_functions_used(node.attr.values()))
        _rename_functions([node], digests.__getitem__, library)
        hasher.update(node.SerializeToString(deterministic=True))
    called = set(used)
    for name in used:
        called.update(_functions_used(value for node in library[name].node_def for value in node.attr.values()))
    named_bytes = 0
    for path, size, mtime in _named_files(_strings(nodes, library, called)):
        hasher.update(f"{path} {size} {mtime}".encode())
        named_bytes += size
    return hasher.hexdigest()[:24], named_bytes


def holds_other_resources(graph: graph_pb2.GraphDef) -> bool:
    """Whether the graph captures a resource (a lookup table, a variable) other than a shuffle's seed
    generator: its handle may not outlive the dataset it was read from, or (in a graph) its session."""
    seeds = {name.split(":")[0] for node in graph.node if node.op.startswith("Shuffle") for name in node.input[1:]}
    return any(
        node.op == "Const" and node.attr["dtype"].type == tf.resource.as_datatype_enum and node.name not in seeds
        for node in graph.node
    )


# -- rewriting it --------------------------------------------------------------------------------


def _set_element_types(node: node_def_pb2.NodeDef, like: node_def_pb2.NodeDef) -> None:
    for attr in ("output_types", "output_shapes"):
        node.attr[attr].CopyFrom(like.attr[attr])
    node.ClearField("experimental_type")  # the full type TensorFlow infers again from the attributes


_FILENAME_NODE = "input_cache/filename"


def with_cache(graph: graph_pb2.GraphDef, where: Plan) -> graph_pb2.GraphDef:
    """A copy of `graph` with hoisted maps moved before the reordering stages and a file cache after them,
    its file name still empty (`_set_filename`): the key is a digest of the stages above it."""
    rewritten = graph_pb2.GraphDef()
    rewritten.CopyFrom(graph)
    nodes = {node.name: node for node in rewritten.node}
    consumers = {node.input[0].split(":")[0]: node for node in rewritten.node if node.input and node.op != "Const"}
    last_cached = where.hoisted[-1] if where.hoisted else where.prefix[-1]
    after = consumers[last_cached]  # the first stage left after the cache, before rewiring
    if where.hoisted:
        nodes[where.hoisted[0]].input[0] = where.prefix[-1]
    name = _prefetched(rewritten, nodes[last_cached])
    constant = rewritten.node.add(name=_FILENAME_NODE, op="Const")
    constant.attr["dtype"].type = tf.string.as_datatype_enum
    cache = rewritten.node.add(name="input_cache/cache", op="CacheDataset", input=[name, constant.name])
    _set_element_types(cache, nodes[last_cached])
    if where.hoisted:
        nodes[where.reordering[0]].input[0] = cache.name
        for reorder in where.reordering:
            _set_element_types(nodes[reorder], nodes[last_cached])
        after.input[0] = where.reordering[-1]
    else:
        after.input[0] = cache.name
    return rewritten


def _prefetched(graph: graph_pb2.GraphDef, stage: node_def_pb2.NodeDef) -> str:
    """Adds a prefetch after `stage` (its elements and order unchanged); returns its name.

    The cache's writer then runs in the consumer's thread while the stages above it (decoding, features)
    run ahead in the prefetch's: a legacy input_fn written without a prefetch would otherwise decode and
    write one after the other, and its first pass would cost the whole write on top (bench/input_cache.py).
    """
    size = graph.node.add(name="input_cache/prefetch_size", op="Const")
    size.attr["dtype"].type = tf.int64.as_datatype_enum
    size.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(tf.data.AUTOTUNE, tf.int64))
    prefetch = graph.node.add(name="input_cache/prefetch", op="PrefetchDataset", input=[stage.name, size.name])
    _set_element_types(prefetch, stage)
    return prefetch.name


def _set_filename(graph: graph_pb2.GraphDef, filename: str) -> None:
    node = next(node for node in graph.node if node.name == _FILENAME_NODE)
    node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(filename))


def dataset_from_graph(graph: graph_pb2.GraphDef, element_spec) -> tf.data.Dataset:
    """The dataset of `graph`. In a graph, its serialised form comes from a py_function, as Grappler would
    fold a constant one into a variant constant that no session can read back."""
    serialized = graph.SerializeToString()
    if tf.executing_eagerly():
        definition = tf.constant(serialized)
    else:
        definition = tf.reshape(tf.py_function(lambda: tf.constant(serialized), [], tf.string), [])
    variant = tf.raw_ops.DatasetFromGraph(graph_def=definition)
    return tf.data.experimental.from_variant(variant, element_spec)


def _describe(graph: graph_pb2.GraphDef, where: Plan) -> str:
    nodes = {node.name: node.op for node in graph.node}
    stages = " -> ".join(nodes[name] for name in where.prefix + where.hoisted)
    if where.hoisted:
        stages += f" (the last {len(where.hoisted)} moved before {', '.join(nodes[n] for n in where.reordering)})"
    return stages


def _is_complete(folder: str) -> bool:
    names = os.listdir(folder)
    return f"{_CACHE_FILE}.index" in names and f"{_CACHE_FILE}.lockfile" not in names


class InputCaches:
    """A process's input caches, one per settings, with one lifetime: `close()` (registered once to run at the
    process's end) publishes what finished and removes every temporary folder."""

    def __init__(self) -> None:
        self._caches: dict[InputCacheSettings, InputCache] = {}
        self._close_at_exit = False
        self._lock = threading.Lock()  # Estimators made in several threads share one cache per settings

    def for_settings(self, settings: InputCacheSettings) -> InputCache:
        """The one cache for `settings`: Estimators made afresh for each call (a common pattern in search
        loops) share what earlier ones wrote."""
        with self._lock:
            if not self._close_at_exit:
                atexit.register(self.close)
                self._close_at_exit = True
            if settings not in self._caches:
                self._caches[settings] = InputCache(settings)
            return self._caches[settings]

    def close(self) -> None:
        with self._lock:
            caches, self._caches = list(self._caches.values()), {}
        for cache in caches:
            cache.close()


PROCESS_CACHES = InputCaches()


class InputCache:
    """Rewrites the datasets input_fns return, and publishes the caches whose first pass has finished
    (`publish`, after each `train` and `evaluate`). Its owner closes it (`close`, or `with InputCache(...)`):
    Estimators' caches are `PROCESS_CACHES`', closed at the process's end."""

    def __init__(self, settings: InputCacheSettings) -> None:
        self._settings = settings
        self._root: str | None = settings.folder
        self._writing: dict[str, str] = {}  # temporary folder -> the published folder it becomes
        self._logged: set[tuple[str, str, str]] = set()
        # each cached dataset's source: the rewritten graph refers to its shuffles' seed generators by
        # handle, so their owner must live as long as the dataset (kept here, not as an attribute of it)
        self._sources: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def _folder(self) -> str:
        if self._root is None:
            # no folder given: this process's own, which no other can find again, so it goes when the process ends
            self._root = tempfile.mkdtemp(prefix="compat-input-cache-")
            atexit.register(shutil.rmtree, self._root, ignore_errors=True)
        os.makedirs(self._root, exist_ok=True)
        return self._root

    def wrap(self, dataset: tf.data.Dataset, input_fn_name: str, mode: str) -> tf.data.Dataset:
        """`dataset` with its deterministic prefix cached; `dataset` itself where it has none, where its
        graph cannot be read (it reads placeholders, holds lookup tables or variables), where the cache
        would not fit, or where the cache is off. A cache must never stop a program that ran without
        it: anything that goes wrong while rewriting leaves the dataset as it was, with a warning."""
        if not self._settings.enabled:
            return dataset
        try:
            return self._rewrite(dataset, input_fn_name, mode)
        except Exception as error:  # noqa: BLE001 (any failure of an optimisation falls back to no optimisation)
            tf.compat.v1.logging.warning("input cache: input_fn %s (%s) left as it is: %s", input_fn_name, mode, error)
            return dataset

    def _rewrite(self, dataset: tf.data.Dataset, input_fn_name: str, mode: str) -> tf.data.Dataset:
        try:
            graph = dataset_graph(dataset)
        except (tf.errors.OpError, ValueError, TypeError) as error:
            tf.compat.v1.logging.debug("input cache: the graph of %s is not readable: %s", input_fn_name, error)
            return dataset
        if graph.ByteSize() > _MAX_GRAPH_BYTES or holds_other_resources(graph):
            return dataset
        where = plan(graph)
        if where is None:
            return dataset
        rewritten = with_cache(graph, where)
        root = self._folder()
        key, named_bytes = cache_key(rewritten, (where.hoisted or where.prefix)[-1])
        final = os.path.join(root, key)
        if os.path.isdir(final):
            filename, verb = os.path.join(final, _CACHE_FILE), "replays"
        else:
            free = shutil.disk_usage(root).free
            if named_bytes > _MAX_SOURCE_BYTES or free < _MIN_FREE_BYTES + _EXPANSION * named_bytes:
                self._log_once(
                    input_fn_name,
                    mode,
                    "does not cache",
                    _describe(graph, where),
                    root,
                    f" ({named_bytes / 1e9:.1f} GB of files named, {free / 1e9:.1f} GB free)",
                )
                return dataset
            temp = atomic.make_temp_folder(final)
            self._writing[temp] = final
            filename, verb = os.path.join(temp, _CACHE_FILE), "caches"
        self._log_once(input_fn_name, mode, verb, _describe(graph, where), root)
        _set_filename(rewritten, filename)
        cached = dataset_from_graph(rewritten, dataset.element_spec)
        self._sources[cached] = dataset
        return cached

    def _log_once(self, input_fn_name: str, mode: str, verb: str, stages: str, root: str, why: str = "") -> None:
        if (input_fn_name, mode, verb) in self._logged:
            return
        self._logged.add((input_fn_name, mode, verb))
        where = "until this process ends" if self._settings.folder is None else "for later runs"
        tf.compat.v1.logging.info(
            "input_fn %s (%s) %s its deterministic stages %s in %s %s%s; "
            "turn this off with RunConfig(input_cache=False) (or %s=0 where the RunConfig does not set it)",
            input_fn_name,
            mode,
            verb,
            stages,
            root,
            where,
            why,
            ENVIRONMENT_VARIABLE,
        )

    def publish(self) -> None:
        """Publishes every cache whose first pass finished: its files hard-linked into the final folder
        (the pipeline that wrote them may go on reading them), the temporary left until `close`."""
        for temp, final in list(self._writing.items()):
            if not os.path.isdir(temp) or not _is_complete(temp) or os.path.isdir(final):
                continue

            def link(folder: str, temp: str = temp) -> None:
                for name in os.listdir(temp):
                    if name.startswith(_CACHE_FILE):
                        os.link(os.path.join(temp, name), os.path.join(folder, name))

            atomic.publish_folder(final, link)

    def __enter__(self) -> InputCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Publishes what finished and removes this process's temporaries (and its temporary root)."""
        self.publish()
        for temp in list(self._writing):
            atomic.remove_own(temp)
        self._writing.clear()
        if self._settings.folder is None and self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
