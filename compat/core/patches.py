"""Every change this project makes to other modules' attributes, `sys.modules` and `sys.meta_path`, in one
list, undone together, newest first.

Two parts make such changes: importing `compat.estimator` (TensorFlow's tf.compat.v1 layers and iterator
factories, Keras' call context: `tf_internals.install`) and `compat.estimator.install()` (the tf.estimator
names, TF 2.15's module paths). Both record each change here as they make it; `compat.estimator.uninstall()`
undoes them all with `PATCHES.undo()`.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

_MISSING = object()


class Patches:
    """Changes made to objects this project does not own, each with how to undo it."""

    def __init__(self) -> None:
        self._undo: list[tuple[str, Callable[[], None]]] = []
        # Set by `undo()`: a program that uninstalled keeps TensorFlow its own, whatever it imports later.
        self._withdrawn = False

    def set_attribute(self, part: str, owner: Any, name: str, value: Any) -> None:
        """`owner.name = value`, for `part` (who made it: "import", "install"); undone to the value `owner`
        itself held, or by removing it where `owner` held none (a module's lazy `__getattr__`, a class
        attribute, shows again). The previous value is read without `getattr`, which would load a lazy one."""
        previous = vars(owner).get(name, _MISSING)

        def undo() -> None:
            if previous is not _MISSING:
                setattr(owner, name, previous)
            elif name in vars(owner):
                delattr(owner, name)  # by the owner's own means (TensorFlow's module wrappers update their caches)

        self._undo.append((part, undo))
        setattr(owner, name, value)

    def set_item(self, part: str, mapping: MutableMapping, key: str, value: Any) -> None:
        """`mapping[key] = value` (a module in `sys.modules`), undone to the previous entry or none."""
        previous = mapping.get(key, _MISSING)

        def undo() -> None:
            if previous is _MISSING:
                mapping.pop(key, None)
            else:
                mapping[key] = previous

        self._undo.append((part, undo))
        mapping[key] = value

    def add_undo(self, part: str, undo: Callable[[], None]) -> None:
        """A change made by `part` another way (a finder put on `sys.meta_path`), and how to undo it."""
        self._undo.append((part, undo))

    def made_by(self, part: str) -> bool:
        """Whether `part`'s changes are in force."""
        return any(owner == part for owner, _ in self._undo)

    def undo(self) -> None:
        """Undoes every change, newest first; changes made on import stay withdrawn until `reopen()`."""
        self._withdrawn = True
        while self._undo:
            _, undo = self._undo.pop()
            undo()

    def withdrawn(self) -> bool:
        """Whether `undo()` ran and no explicit install since: imports must leave other modules alone."""
        return self._withdrawn

    def reopen(self) -> None:
        """An explicit install: changes may be made again."""
        self._withdrawn = False


PATCHES = Patches()
