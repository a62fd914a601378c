"""The CLI fixes glibc's mmap threshold (stallscope/allocator.py): large freed arrays go back to
the system instead of staying in the heap (the peak memory figure is bench/README.md's)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from stallscope.allocator import MMAP_THRESHOLD_BYTES, return_large_frees


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's M_MMAP_THRESHOLD is glibc's")
def test_the_threshold_is_set_where_glibc_allocates():
    assert return_large_frees() is True


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's M_MMAP_THRESHOLD is glibc's")
def test_the_cli_sets_it_before_a_command_runs():
    """A block just above the threshold is its own mapping once the CLI has run (glibc's
    malloc_usable_size of a mapped chunk is its page-rounded size less the header), and from the
    heap in a process that never set it after a larger block was freed."""
    probe = (
        "import ctypes, sys\n"
        "libc = ctypes.CDLL(None)\n"
        "libc.malloc.restype = ctypes.c_void_p\n"
        "libc.malloc_usable_size.argtypes = [ctypes.c_void_p]\n"
        "libc.free.argtypes = [ctypes.c_void_p]\n"
        "if sys.argv[1] == 'cli':\n"
        "    from stallscope.cli import app\n"
        "    sys.argv = ['stallscope', '--help']\n"
        "    try:\n"
        "        app.main()\n"
        "    except SystemExit:\n"
        "        pass\n"
        "libc.free(libc.malloc(8 << 20))  # raises glibc's dynamic threshold to 8 MB\n"
        f"p = libc.malloc({MMAP_THRESHOLD_BYTES * 2})\n"
        "print(libc.malloc_usable_size(p) % 4096, file=sys.stderr)\n"
    )
    sizes = {}
    for mode in ("plain", "cli"):
        r = subprocess.run([sys.executable, "-c", probe, mode], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        sizes[mode] = int(r.stderr.strip().splitlines()[-1])
    # A mapped chunk's usable size is a page multiple less its 16-byte header; a heap chunk's is
    # the request rounded to 16 bytes plus 8.
    assert sizes["cli"] == 4096 - 16, sizes
    assert sizes["plain"] != 4096 - 16, sizes
