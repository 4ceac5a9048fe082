// C source submissions, built at grading time (docs/grading.md, "C source"): the system's C
// compiler run behind the same walls as a submission's run, the key and the other submissions
// hidden, into the grading's build folder.
#pragma once

#include "grade/confine.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace prereg::grade {

/// What building one C source submission gave.
struct build_result {
  bool ok = false;
  std::filesystem::path library; ///< OUT/libsubmission.so when ok
  std::string log;               ///< the compiler's output (its last 4 KiB)
  std::vector<std::string> command;
  confine_facts facts;
};

/// Compiles the .c files of `sources` (a submission's folder) into `out`/libsubmission.so with
/// `$PREREG_CC` (else `cc`): C11, -O2, -fPIC, -shared, the arm ABI's header (compiled into
/// prereg) on the include path, -lm; confined by `plan` (which must keep `out` writable).
[[nodiscard]] build_result build_c_submission(const std::filesystem::path &sources,
                                              const std::vector<std::string> &files,
                                              const std::filesystem::path &out, confine_plan plan);

} // namespace prereg::grade
