"""`python -m compat.cache list|remove`: the dataset cache's command under the name it had before 0.2.

The cache lives in `compat.data.cache` since 0.2.0; this name keeps the command, and
`from compat import cache` with every name of that module, working for scripts written
against 0.1. Like the command there, it imports no TensorFlow.
"""

from typing import Any

from compat.data import cache as _cache
from compat.data.cache import main


def __getattr__(name: str) -> Any:
    """Every other name of `compat.data.cache` (`fingerprint`, `list_entries`...), as 0.1's module had it."""
    return getattr(_cache, name)


if __name__ == "__main__":
    main()
