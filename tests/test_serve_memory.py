"""``kernel.workers.serve.return_large_blocks``: a worker gives a login's argon2id memory back.

Each hash takes 19 MiB on a thread; with glibc's default (a threshold that rises after the first
large block is freed) every thread that hashed kept it, and a worker's idle RSS grew by about
140 MB after 12 concurrent logins (docs/performance.md). Measured in a fresh interpreter, where
nothing else moves the RSS by megabytes.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

HASH_ON_THREADS = """
import sys, threading
from kernel.workers.serve import return_large_blocks
if sys.argv[1] == "on":
    return_large_blocks()
from kernel.auth.passwords import hash_password
def rss_mb():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]) / 1024
hash_password("warm-up-1")  # the imports and the first hash on this thread
before = rss_mb()
threads = [threading.Thread(target=hash_password, args=(f"password-{i}",)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(rss_mb() - before)
"""


def _growth(mode: str) -> float:
    out = subprocess.run([sys.executable, "-c", HASH_ON_THREADS, mode], capture_output=True, text=True,
                         timeout=60, check=True)
    return float(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_hashes_on_threads_leave_no_memory_behind():
    assert _growth("off") > 15  # what it fixes: at least one hash's 19 MiB stays
    assert _growth("on") < 8
