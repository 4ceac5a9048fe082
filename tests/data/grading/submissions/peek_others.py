# Hack (peeking at the others): looks for the other submissions' files, runs and the held-out
# secret, and raises with what it saw (so the leaderboard quotes it). Excluded (its setup
# fails); the test asserts that it saw only its own submission's folder.
import json
import os


def rmsnorm(t):
    here = os.path.dirname(os.path.abspath(__file__))
    task = os.path.dirname(here)
    seen = {"submissions": sorted(os.listdir(task))}
    raise RuntimeError("saw " + json.dumps(seen, sort_keys=True))
