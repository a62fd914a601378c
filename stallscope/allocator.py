"""The C allocator's policy for the large arrays the native passes and numpy allocate.

glibc's malloc serves a request above its mmap threshold with its own mapping, returned to the
system when freed; but each such free raises the threshold to the freed block's size (up to 32 MB),
so after the first packet-table column (8 bytes x 2 M packets) is freed every later one comes from
the heap, where a freed block is kept for reuse. The analysis frees and allocates such columns pass
after pass, and the kept blocks add up: a fixed threshold holds the peak of `stallscope analyze` on
the 2.1 M-packet bench capture 16 % lower (about 1,420 -> 1,190 MB) for about 0.15 s more in page
faults (bench/README.md). Polars allocates with its own jemalloc and is not affected.
"""

from __future__ import annotations

import ctypes
import sys

# mallopt's parameter number for the mmap threshold (glibc malloc.h M_MMAP_THRESHOLD).
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 512 * 1024


def return_large_frees() -> bool:
    """Fix glibc's mmap threshold at MMAP_THRESHOLD_BYTES for this process, so that large freed
    blocks go back to the system. True when set; False where the C library has no such knob (not
    Linux, or a libc without mallopt)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
