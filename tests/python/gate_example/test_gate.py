# A frozen prediction gating CI (docs/python.md): run with the prereg_gpu pytest plugin,
#   pytest tests/python/gate_example --prereg-store STORE --prereg-reports REPORTS [--prereg-run]
# The verdict comes from the newest report of the protocol, after it audits clean.


def test_fused_is_not_ten_times_slower(prereg_verdict):
    assert prereg_verdict("G1", "py_gate_example") == "confirmed"
