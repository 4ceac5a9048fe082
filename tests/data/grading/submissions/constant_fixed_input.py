# Hack (constant output on a fixed input): computes the answer once, for the input it is bound
# to, and writes that constant on every call, as a kernel tuned to a harness's one fixed test
# input would. It passes a check on that input; caught: every timed window gets fresh inputs,
# so a spot check fails it.
import numpy as np


def rmsnorm(t):
    x, g, y = t.x, t.gamma, t.y
    eps = np.float32(t.eps)
    ms = np.mean(x * x, axis=1, keepdims=True)
    answer = x * (np.float32(1.0) / np.sqrt(ms + eps)) * g

    def step():
        y[...] = answer

    return step
