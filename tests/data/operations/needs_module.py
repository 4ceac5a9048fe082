# An operation file that imports, at its top level, a module no test machine has: exit 5.
import prereg_no_such_module  # noqa: F401

doubled = {}
