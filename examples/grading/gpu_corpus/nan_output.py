# GPU hack (NaN output).
def rmsnorm(t):
    y = t.y

    def step():
        y.fill_(float("nan"))

    return step
