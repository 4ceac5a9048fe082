# Hack (reading the reference): hunts the process's objects for the expected output (a float64
# array of the output's shape, as the garbage-collector hack of a 2025 timing library did) and
# copies it instead of computing. Caught: the float64 reference of a checked call is computed
# only after the call returns and lives in prereg's own memory, not in a Python object; what the
# hunt finds is not the answer, and the gate fails the copy.
import gc

import numpy as np


def rmsnorm(t):
    y = t.y
    shape = y.shape

    def step():
        for o in gc.get_objects():
            if isinstance(o, np.ndarray) and o.dtype == np.float64 and o.shape == shape:
                y[...] = o
                return
        y[...] = 0

    return step
