"""The application's audio input: one prefetching Dataset builder that feeds every mode.

  builder     the stages, in the tf.data guide's order (list, decode, features, cache, batch,
              augment, prefetch), and the public API, also reachable here: `build_dataset`,
              `make_input_fn`, `index`, `class_names`, ...
  audio       decoding (in-graph for 16-bit PCM WAV, soundfile otherwise) and features
  sources     listing a source (folders, FSDD, a manifest, the built-in set) into splits
  cache       the persistent, keyed, atomic disk cache (`python -m compat.data.cache`)
  synthetic   the built-in dataset, generated on first use
  fetch       downloading a source once, checked and atomic
  service     a tf.data service dispatcher or worker (`python -m compat.data.service`)

The builder's names are loaded on first use: importing `compat.data.sources` (which `flags.py`
does before TensorFlow may load, for `train.py`'s quiet start) must not import TensorFlow.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING, Any

_BUILDER = "compat.data.builder"
# `from compat.data import cache` asks this module for the name before it imports the submodule: it must
# get the submodule (the cache command imports no TensorFlow), not a lookup in the builder.
_SUBMODULES = frozenset(module.name for module in pkgutil.iter_modules(__path__))


if TYPE_CHECKING:  # the builder's names for type checkers and editors; at run time they load when first used
    from compat.data.builder import (
        AUTOTUNE,
        CACHE_MODES,
        PipelineConfig,
        Source,
        augment,
        batch_examples,
        build_dataset,
        check_audio,
        check_cache_folder,
        class_names,
        decode,
        examples,
        feature_shape,
        fill_cache,
        index,
        list_files,
        make_input_fn,
        prefetch,
        split_size,
        through_data_service,
        transform,
        window_samples,
    )


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    builder = importlib.import_module(_BUILDER)
    if name in builder.__all__:
        return getattr(builder, name)
    raise AttributeError(f"module 'compat.data' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted([*globals(), *importlib.import_module(_BUILDER).__all__])
