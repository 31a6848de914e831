"""`python -m compat.cache list|remove`: the dataset cache's command under the name it had before 0.2.

The cache lives in `compat.data.cache` since 0.2.0; this name keeps the command (and
`from compat import cache`) working for scripts written against 0.1. Like the command
there, it imports no TensorFlow.
"""

from compat.data.cache import CacheEntry, default_cache_dir, list_entries, main, remove_entries

__all__ = ["CacheEntry", "default_cache_dir", "list_entries", "main", "remove_entries"]

if __name__ == "__main__":
    main()
