// Python files compared by their syntax trees in a child process (source_changes.hpp).
#include "run/source_changes.hpp"

#include "arms/python_runtime.hpp"
#include "base/process.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace prereg {

json python_source_changes(const std::filesystem::path &frozen, const std::filesystem::path &now) {
  pipe_ends up = open_pipe(on_exec::close);
  const pid_t pid = fork_child([&] {
    up.read.reset();
    ::unsetenv("PREREG_KEY");
    std::string text;
    try {
      auto &rt = outside::python_runtime::get();
      rt.start();
      outside::PyObject *r =
          rt.call("changed_functions", rt.tuple({rt.str(frozen.string()), rt.str(now.string())}));
      if (const char *s = rt.api().PyUnicode_AsUTF8(r))
        text = s;
    } catch (...) {
      text.clear(); // no usable Python: the message names the file only
    }
    (void)write_all(up.write.get(), text);
    std::_Exit(0);
  });
  up.write.reset();
  const std::string text = read_all(up.read.get());
  (void)wait_for(pid);
  try {
    const json j = json::parse(text);
    return j.is_object() ? j : json();
  } catch (const std::exception &) {
    return json();
  }
}

} // namespace prereg
