# The Python API's tests share one store, key and reports folder per session.
import os
import pathlib

import pytest

import prereg_gpu

HERE = pathlib.Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("prereg")
    os.environ["XDG_CACHE_HOME"] = str(root / "cache")  # the ledger's verified-prefix cache
    lab = {"store": root / "store", "key": root / "key" / "signing.key",
           "reports": root / "reports", "root": root}
    lab["hash"] = prereg_gpu.freeze(HERE / "small.yaml", store=lab["store"], key=lab["key"])
    return lab


@pytest.fixture(scope="session")
def report(lab):
    seen = []
    r = prereg_gpu.run(lab["hash"], store=lab["store"], key=lab["key"], out=lab["reports"],
                       progress=seen.append)
    lab["progress"] = seen
    return r
