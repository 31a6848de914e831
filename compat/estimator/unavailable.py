"""What `check --fix` binds to a tf.contrib module or name that has no home in TensorFlow 2, here or in tf-slim.

`from tensorflow.contrib import foo as contrib_foo` stops a whole file at import on TensorFlow 2, even when `foo` is
used in one function that a run never reaches. `--fix` rewrites such an import to `contrib_foo =
unavailable("tf.contrib.foo")`: the file imports, and only a use of the name stops, with one line naming it. The
check's comments above the import and above each use say the same. Importing this module loads nothing.
"""

from __future__ import annotations

from typing import Any, NoReturn

from compat.core.errors import UserError

__all__ = ["ContribUnavailableError", "unavailable"]


class ContribUnavailableError(UserError, AttributeError):
    """A use of a tf.contrib module or name that TensorFlow 2 does not have and `check --fix` found no home for."""


class _Unavailable:
    """Stands for a tf.contrib module or name: reading an attribute of it or calling it stops."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def _stop(self, what: str) -> NoReturn:
        raise ContribUnavailableError(
            f"{what}: tf.contrib is not in TensorFlow 2, and the migration check knows no home for it, here or in "
            "tf-slim: replace it by hand (docs/migration.md lists the homes it knows)"
        )

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute)  # Python's own probes (copy, pickle, inspect) are not uses
        self._stop(f"{object.__getattribute__(self, '_name')}.{attribute}")

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._stop(object.__getattribute__(self, "_name"))

    def __repr__(self) -> str:
        return f"<unavailable {object.__getattribute__(self, '_name')}>"


def unavailable(name: str) -> Any:
    """A stand-in for the tf.contrib module or name `name` (`"tf.contrib.foo"`): using it raises
    `ContribUnavailableError` naming it."""
    return _Unavailable(name)
