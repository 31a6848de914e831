"""compat/modes/process.py: what train.py's process does around a run, and what it puts back after."""

from __future__ import annotations

import os
import signal

from compat.core.errors import UserError
from compat.modes.process import RunGuard


def test_the_guard_owns_ctrl_c_only_while_the_run_trains(tmp_path):
    before = signal.getsignal(signal.SIGINT)
    with RunGuard(str(tmp_path / "run")):
        assert signal.getsignal(signal.SIGINT) not in (before, signal.default_int_handler)
    assert signal.getsignal(signal.SIGINT) is before


def test_a_refused_run_leaves_no_folder_it_made_and_keeps_what_was_there(tmp_path):
    (tmp_path / "kept").mkdir()
    model_dir = tmp_path / "kept" / "new" / "run"
    guard = RunGuard(str(model_dir))
    os.makedirs(model_dir)
    (model_dir / "flags.txt").write_text("--mode=keras\n")
    message, code = guard.said(UserError("`batch_size` must be > 0"))
    assert (message, code) == ("`batch_size` must be > 0", 2)
    assert os.listdir(tmp_path / "kept") == []  # new/run and the flags it wrote are gone, kept/ stays


def test_a_bug_is_not_said_in_one_line(tmp_path):
    assert RunGuard(str(tmp_path)).said(KeyError("a bug")) is None
