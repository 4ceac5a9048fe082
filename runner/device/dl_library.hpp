// Loading an optional CUDA library with dlopen (CUPTI, cuBLASLt): where to look for it, and one
// symbol bound at a time (docs/cuda.md: every optional runtime piece is dlopen'd, so the one
// static binary runs everywhere and records `unknown` where a piece is missing).
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

namespace prereg::dl {

/// Binds `fn` to the symbol `name` of `lib`; false when the library has none.
template <class F> bool bind(void *lib, F &fn, const char *name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

/// Where to look for `soname`, in order: the path in the environment variable `env` (when set
/// and not empty), the loader's own search by `soname` (a library already loaded, by torch for
/// instance, is found by its name), then each of `subdirs` under $CUDA_HOME and
/// /usr/local/cuda.
inline std::vector<std::string> candidates(const char *env, const std::string &soname,
                                           std::initializer_list<const char *> subdirs) {
  std::vector<std::string> out;
  if (const char *p = std::getenv(env); p != nullptr && *p != '\0')
    out.emplace_back(p);
  out.push_back(soname);
  std::vector<std::string> roots;
  if (const char *h = std::getenv("CUDA_HOME"); h != nullptr && *h != '\0')
    roots.emplace_back(h);
  roots.emplace_back("/usr/local/cuda");
  for (const auto &r : roots)
    for (const char *sub : subdirs)
      out.push_back(r + sub + "/" + soname);
  return out;
}

} // namespace prereg::dl
