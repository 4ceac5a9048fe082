// The summary `prereg run` and `prereg try` print on stderr when they end (docs/cli.md, "The
// summary of a run"): what the report says, in a few lines, from report.json alone.
#pragma once

#include "model/report_model.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace prereg {

/// The summary's lines: a header (the protocol, the run, the attempt), one line per prediction
/// (id, verdict, its claim shortened), the arms excluded from verdicts and the cells that
/// errored or were skipped (grouped by arm, each with its first reason), the defects, the cache
/// policy and the copy ceiling's source (render/measuring_notes.hpp), and report.md in
/// `folder`. Every line is escaped for a terminal (control and bidirectional characters).
[[nodiscard]] std::vector<std::string> terminal_summary(const report_document &report,
                                                        const std::filesystem::path &folder);

} // namespace prereg
