"""The operator returns freed memory (hivecat/malloc.py): blocks the size of a TLS connection's buffer, freed
while small long-lived objects sit between them, leave the process's resident set. Without the fixed mmap
threshold glibc keeps them (the operator stayed at ~600 MB after its start-up burst)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hivecat.malloc import return_freed_memory

SCRIPT = """
import ctypes, sys
from hivecat.malloc import return_freed_memory
if sys.argv[1] == "fixed":
    assert return_freed_memory()
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
libc.free(libc.malloc(1 << 20))  # a big block freed: glibc raises its mmap threshold to its size
before = rss()
blocks, kept = [], []
for _ in range(400):  # 100 MiB in 256 KiB blocks, each followed by a small block that stays
    block = libc.malloc(256 * 1024)
    ctypes.memset(block, 1, 256 * 1024)
    blocks.append(block)
    kept.append(libc.malloc(64))
for block in blocks:
    libc.free(block)
print(rss() - before)
"""


def kept_after_free(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, check=True)
    return int(done.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux") or not return_freed_memory(),
                    reason="mallopt is glibc's (Linux); other C libraries return memory their own way")
def test_freed_blocks_leave_the_resident_set() -> None:
    assert kept_after_free("default") > 80 * 1024 * 1024  # glibc's dynamic threshold keeps them
    assert kept_after_free("fixed") < 20 * 1024 * 1024
