"""Memory the operator frees goes back to the system.

glibc serves a block above its mmap threshold (128 KiB) with mmap and returns it on free, but raises the
threshold to the size of each such block freed: after the TLS connections of a start-up burst close (each
holds a 256 KiB read buffer), later blocks of that size come from the heap and stay there. At 1,000 resources
the operator kept ~600 MB after the burst; with the threshold fixed, ~400 MB (benchmarks/operator_scale.py)."""

from __future__ import annotations

import ctypes
import ctypes.util

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter (malloc.h)
MMAP_THRESHOLD = 128 * 1024  # glibc's default, kept fixed


def return_freed_memory() -> bool:
    """Fix glibc's mmap threshold for this process (True when set; other C libraries: nothing to do)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
