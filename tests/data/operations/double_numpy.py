# The numpy arm of the `doubled` and `misbehaving` operations of bad_ops.py: y = 2 x.
def double(t):
    def step():
        t.y[...] = 2 * t.x
    return step
