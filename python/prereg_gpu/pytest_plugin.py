"""The pytest plugin (entry point `prereg_gpu`): options naming the store and reports folder, and
a `prereg_verdict` fixture, so that a frozen prediction gates CI:

    def test_fused_is_faster(prereg_verdict):
        assert prereg_verdict("P1", "ln_batch1") == "confirmed"

The verdict is read from the newest report of the protocol after it audits clean
(prereg_gpu.verdict); with --prereg-run the protocol is first run (it must be frozen), signed with
--prereg-key (else $PREREG_KEY, else prereg's default key)."""
import pytest

from . import api


def pytest_addoption(parser):
    group = parser.getgroup("prereg")
    group.addoption("--prereg-store", default=None,
                    help="prereg store (else $PREREG_STORE, else ./.prereg)")
    group.addoption("--prereg-reports", default="reports", help="reports folder (./reports)")
    group.addoption("--prereg-key", default=None,
                    help="signing key for --prereg-run (else $PREREG_KEY, else "
                         "~/.config/prereg/signing.key)")
    group.addoption("--prereg-run", action="store_true",
                    help="run each protocol a gate names once before reading its verdict")


@pytest.fixture(scope="session")
def prereg_verdict(request):
    """verdict(prediction_id, protocol_id) -> "confirmed" | "refuted" | "inconclusive"."""
    store = request.config.getoption("--prereg-store")
    reports = request.config.getoption("--prereg-reports")
    fresh = request.config.getoption("--prereg-run")
    key = request.config.getoption("--prereg-key")
    ran = set()

    def verdict(prediction_id, protocol_id):
        if fresh and protocol_id not in ran:
            api.run(protocol_id, store=store, key=key, out=reports, progress=False)
            ran.add(protocol_id)
        return api.verdict(prediction_id, protocol_id, reports=reports, store=store)

    return verdict
