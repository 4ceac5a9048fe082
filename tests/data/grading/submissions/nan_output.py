# Hack (NaN output): writes NaN everywhere, which a comparison like abs(out - ref) > tol never
# flags. Caught: NaN never matches.
import numpy as np


def rmsnorm(t):
    y = t.y

    def step():
        y.fill(np.nan)

    return step
