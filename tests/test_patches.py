"""compat/core/patches.py: each change made to another module is undone, newest first, to what was there."""

from __future__ import annotations

import types

from compat.core.patches import Patches


def test_changes_are_undone_newest_first_to_what_the_owner_held():
    module = types.ModuleType("owner")
    module.kept = "original"
    registry = {"present": "before"}
    patches = Patches()
    patches.set_attribute("install", module, "kept", "patched")
    patches.set_attribute("install", module, "added", "new")
    patches.set_attribute("install", module, "kept", "patched twice")
    patches.set_item("install", registry, "present", "replaced")
    patches.set_item("install", registry, "absent", "added")
    undone = []
    patches.add_undo("import", lambda: undone.append(module.kept))
    assert patches.made_by("install") and patches.made_by("import") and not patches.made_by("other")
    patches.undo()
    assert undone == ["patched twice"]  # the newest change is undone first
    assert module.kept == "original" and not hasattr(module, "added")
    assert registry == {"present": "before"}
    assert not patches.made_by("install")


def test_an_attribute_a_module_served_lazily_is_served_again_after_undo():
    module = types.ModuleType("lazy")
    module.__getattr__ = lambda name: f"lazy {name}"  # PEP 562, as TensorFlow's lazy modules
    patches = Patches()
    patches.set_attribute("install", module, "layers", "patched")
    assert module.layers == "patched"
    patches.undo()
    assert "layers" not in vars(module) and module.layers == "lazy layers"
