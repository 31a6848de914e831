"""The one base of the errors a user sees: bad input, a folder in use, a fault of the machine.

Each such error names the flag, file or folder and says what to do, in one line. `train.py` catches
`UserError` and prints that line; anything else is a bug and keeps its traceback. The classes keep
their standard bases too (`ValueError`, `OSError`, ...), so code that caught those still does.
"""

from __future__ import annotations


class UserError(Exception):
    """An error whose message is the whole story for the user: no traceback needed.

    `exit_code` is what `train.py` exits with: 2 for settings refused before anything ran (a flag, a
    folder, a source), 1 for bad data (an audio file that cannot be read, found before training or
    during it) and for a run that stopped on the way (a loss gone NaN).
    """

    exit_code = 2
