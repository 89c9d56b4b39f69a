"""Issue 11 item 6: one kernel called from several threads at once. Kernel arguments are
state of the shared cl_kernel, so without a lock a call can launch with another thread's
size and pointer: wrong results and writes past the arrays. Runs in a subprocess, since the
failure it guards against corrupts memory."""

from __future__ import annotations

import os
import subprocess
import sys

RUN = """
import sys, threading
import numpy as np, tinytc

k = tinytc.jit('''func @fill(%v: f32, %a: memref<f32x?>) {
  %n = size %a[0] : memref<f32x?>
  foreach %i = 0, %n {
    store %v, %a[%i] : memref<f32x?>
  }
}''')
GUARD, CALLS = 64, 400
wrong = []

def work(t):
    size = 16 * (1 + 3 * t)  # each thread its own size: a mixed-up launch shows
    buffer = np.zeros(size + 2 * GUARD, np.float32)
    array = buffer[GUARD:GUARD + size]
    for c in range(CALLS):
        value = np.float32(t * 10000 + c)
        k.fill(value, array, howmany=1)
        if not (array == value).all() or buffer[:GUARD].any() or buffer[GUARD + size:].any():
            wrong.append((t, c))

sys.setswitchinterval(1e-6)
threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(wrong), "wrong")
"""


def test_concurrent_calls_of_one_kernel_are_correct() -> None:
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    done = subprocess.run(
        [sys.executable, "-c", RUN], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0", "wrong"], done.stdout
