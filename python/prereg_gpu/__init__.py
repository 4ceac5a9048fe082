"""prereg from Python: a thin API over the `prereg` binary (docs/python.md).

Every call runs the binary this package was installed with; nothing is computed again in
Python. A failure of the binary is a `PreregError` carrying its one line
(`prereg: error: WHAT (WHERE)`) and its documented exit code.
"""
from ._binary import binary_path
from .api import (
    AuditCheck,
    AuditResult,
    Cell,
    Defect,
    Prediction,
    Report,
    audit,
    check,
    freeze,
    latest_report,
    run,
    try_,
    verdict,
)
from .arms import arm, kernel, protocol_yaml, write_protocol
from .errors import PreregError
from .grading import Exclusion, Reward, grade, reward, submit
from .notices import PreregNotice
from .progress import Progress

__all__ = [
    "AuditCheck",
    "AuditResult",
    "Cell",
    "Defect",
    "Exclusion",
    "Prediction",
    "PreregError",
    "PreregNotice",
    "Progress",
    "Report",
    "Reward",
    "arm",
    "audit",
    "binary_path",
    "check",
    "freeze",
    "grade",
    "kernel",
    "latest_report",
    "protocol_yaml",
    "reward",
    "run",
    "submit",
    "try_",
    "verdict",
    "write_protocol",
]
