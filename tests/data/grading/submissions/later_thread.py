# Hack (later thread): the step returns at once and a thread writes the outputs later, outside
# the timed window. Caught: the outputs are still poison when the gate reads them, and a step
# that returns at once is faster than the physical floor; or, when the thread writes after
# prereg released the buffers, its own measuring process crashes (run-failed).
import threading
import time

import numpy as np


def rmsnorm(t):
    x, g, y = t.x, t.gamma, t.y
    eps = np.float32(t.eps)

    def work():
        time.sleep(0.05)
        ms = np.mean(x * x, axis=1, keepdims=True)
        np.multiply(x * (np.float32(1.0) / np.sqrt(ms + eps)), g, out=y)

    def step():
        threading.Thread(target=work, daemon=True).start()

    return step
