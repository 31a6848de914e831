"""FSDD made several times larger without a download: its recordings linked again under new speaker names.

`linked(data_dir, copies)` returns a folder of symbolic links, FSDD's files `copies` times over: copy k > 0 of
`3_jackson_12.wav` is `3_jacksonb_12.wav` (letters, as FSDD's speaker names are), so its split (the take) and
label (the digit) are the original's, and each copy is a different file to the pipeline and its cache key.
`python bench/pipeline.py --copies 4` and `python bench/stages.py --copies 4` read FSDD four times over, so
that a fixed cost cannot hide behind a small epoch.
"""

from __future__ import annotations

import atexit
import os
import shutil
import string
import tempfile


def linked(data_dir: str, copies: int) -> str:
    """`data_dir` itself for one copy, else a temporary folder (removed at exit) of links, `copies` times over."""
    if copies <= 1:
        return data_dir
    root = os.path.join(data_dir, "recordings") if os.path.isdir(os.path.join(data_dir, "recordings")) else data_dir
    folder = tempfile.mkdtemp(prefix="fsdd-copies-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    for name in sorted(os.listdir(root)):
        parts = name.split("_")
        if not name.endswith(".wav") or len(parts) != 3:
            continue
        for copy in range(copies):
            speaker = parts[1] + (string.ascii_lowercase[copy] if copy else "")
            os.symlink(
                os.path.abspath(os.path.join(root, name)), os.path.join(folder, f"{parts[0]}_{speaker}_{parts[2]}")
            )
    return folder
