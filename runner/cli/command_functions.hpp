// The commands, one function each, grouped by file; each takes the arguments after its name
// and returns the exit code. The table that names them is in commands.cpp (internal to cli).
#pragma once

#include "cli/common.hpp"

namespace prereg::cli::detail {

// commands_protocol.cpp: a protocol file
int cmd_freeze(args_t args);
int cmd_check(args_t args);
int cmd_canon(args_t args);

// commands_run.cpp: runs
int cmd_run(args_t args);
int cmd_try(args_t args);
int cmd_merge(args_t args);
int cmd_slurm(args_t args);

// commands_report.cpp: reports
int cmd_audit(args_t args);
int cmd_report(args_t args);
int cmd_compare(args_t args);

// commands_store.cpp: the store, its keys and ledger
int cmd_export(args_t args);
int cmd_import(args_t args);
int cmd_keygen(args_t args);
int cmd_list(args_t args);
int cmd_show(args_t args);
int cmd_ledger(args_t args);

// commands_grade.cpp: grading tasks (docs/grading.md)
int cmd_seal(args_t args);
int cmd_submit(args_t args);
int cmd_submissions(args_t args);
int cmd_grade(args_t args);
int cmd_reward(args_t args);

// commands_site.cpp: the history site
int cmd_site(args_t args);

// commands_devices.cpp: arms and devices
int cmd_arms(args_t args);
int cmd_devices(args_t args);

} // namespace prereg::cli::detail
