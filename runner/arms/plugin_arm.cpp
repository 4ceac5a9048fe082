// Shared-library arms (prereg/arm_abi.h, docs/plugins.md): the library's table read through
// dlopen, each arm bound to one buffer set by its setup, stepped, torn down.
#include "arms/outside_arm.hpp"

#include "crypto/crypto.hpp"
#include "prereg/arm_abi.h"
#include "prereg/error.hpp"
#include "spec/operation.hpp"
#include "spec/protocol.hpp"

#include "arms/outside_common.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <utility>

namespace fs = std::filesystem;

namespace prereg {

namespace outside {

// --- crash guard ----------------------------------------------------------------------------

namespace {
const crash_text *volatile g_crash = nullptr;
volatile int g_crash_fd = -1;

extern "C" void on_crash(int sig) {
  const crash_text *m = g_crash;
  if (m != nullptr) {
    const char *name = sig == SIGSEGV  ? "SIGSEGV"
                       : sig == SIGBUS ? "SIGBUS"
                       : sig == SIGFPE ? "SIGFPE"
                       : sig == SIGILL ? "SIGILL"
                                       : "SIGABRT";
    // async-signal-safe: write(2) only, of text formatted before the crash
    const int fd = g_crash_fd >= 0 ? g_crash_fd : STDERR_FILENO;
    const auto put = [fd](const char *s, std::size_t n) {
      while (n > 0) {
        const ssize_t r = ::write(fd, s, n);
        if (r <= 0)
          return;
        s += r;
        n -= static_cast<std::size_t>(r);
      }
    };
    const std::string &head = g_crash_fd >= 0 ? m->json_head : m->line_head;
    const std::string &tail = g_crash_fd >= 0 ? m->json_tail : m->line_tail;
    put(head.data(), head.size());
    put(name, std::strlen(name));
    put(tail.data(), tail.size());
    ::_exit(2);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}
} // namespace

void install_crash_guard() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
      struct sigaction sa {};
      sa.sa_handler = on_crash;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESETHAND | SA_NODEFER;
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

void set_crash_channel(int fd) { g_crash_fd = fd; }

namespace {
std::string g_arm_log;
constexpr std::size_t arm_log_limit = std::size_t{1} << 20; // [bytes]
} // namespace

void append_arm_log(std::string_view reason, std::string_view traceback) {
  const std::string entry =
      fmt::format("=== {}\n{}{}", reason, traceback, traceback.ends_with('\n') ? "" : "\n");
  if (g_arm_log.size() + entry.size() <= arm_log_limit)
    g_arm_log += entry;
}

std::string take_arm_log() { return std::exchange(g_arm_log, {}); }

crash_scope::crash_scope(const crash_text &text) : m_prev(g_crash) { g_crash = &text; }
crash_scope::~crash_scope() { g_crash = m_prev; }

crash_text make_crash_text(const std::string &what) {
  crash_text t;
  const std::string tail = "); no report was written";
  t.line_head = fmt::format("prereg: error: {} (", what);
  t.line_tail = tail + "\n";
  // The pipe's error message, split where the signal's name goes (names are plain ASCII).
  const std::string marker = "@@SIGNAL@@";
  const std::string msg =
      json{{"error", {{"code", 2}, {"message", what + " (" + marker + tail}, {"where", ""}}}}
          .dump();
  const auto at = msg.find(marker);
  t.json_head = msg.substr(0, at);
  t.json_tail = msg.substr(at + marker.size()) + "\n";
  return t;
}

crash_text crash_message(const std::string &arm_id, const std::string &label,
                         std::string_view phase) {
  return make_crash_text(fmt::format("arm {} ({}) crashed in its {}", escape_for_message(arm_id),
                                     escape_for_message(label), phase));
}

std::string escape_for_message(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (const char32_t bidi = prereg::detail::bidi_control_at(s, i)) {
      out += prereg::detail::bidi_escape(bidi);
      i += prereg::detail::bidi_length(bidi) - 1;
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

DLDataType dl_type(dtype t) {
  switch (t) {
  case dtype::fp32:
    return {kDLFloat, 32, 1};
  case dtype::fp16:
    return {kDLFloat, 16, 1};
  case dtype::bf16:
    return {kDLBfloat, 16, 1};
  case dtype::fp8_e4m3:
    return {PREREG_DL_FLOAT8_E4M3FN, 8, 1};
  case dtype::fp8_e5m2:
    return {PREREG_DL_FLOAT8_E5M2, 8, 1};
  case dtype::int8:
    return {kDLInt, 8, 1};
  case dtype::uint8:
    return {kDLUInt, 8, 1};
  case dtype::int32:
    return {kDLInt, 32, 1};
  case dtype::int64:
    return {kDLInt, 64, 1};
  case dtype::boolean:
    return {PREREG_DL_BOOL, 8, 1};
  }
  return {kDLFloat, 32, 1};
}

DLDataType capsule_type(dtype t) {
  return t == dtype::boolean || is_fp8(t) ? DLDataType{kDLUInt, 8, 1} : dl_type(t);
}

dl_set::dl_set(const outside_call &call, bool capsules) {
  const operation_desc &op = *call.op;
  const shape &s = call.extents;
  const std::size_t n = op.tensors.size();
  names.reserve(n);
  shapes.resize(n);
  tensors.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const tensor_desc &d = op.tensors[i];
    names.push_back(d.name.c_str());
    for (const auto &axis : d.dims)
      shapes[i].push_back(s.extents.at(static_cast<std::size_t>(op.axis_of(axis))));
    DLTensor &t = tensors[i];
    t.data = call.data[i];
    t.device = call.device == "cuda" ? DLDevice{kDLCUDA, call.device_ordinal} : DLDevice{kDLCPU, 0};
    t.ndim = static_cast<int32_t>(shapes[i].size());
    t.dtype = capsules ? capsule_type(d.type(call.type)) : dl_type(d.type(call.type));
    t.shape = shapes[i].data();
    t.strides = nullptr; // compact, row-major
    t.byte_offset = 0;
  }
}

std::vector<dtype> parse_dtypes(std::string_view list, const std::string &where) {
  std::vector<dtype> out;
  for (const auto &w : split_list(list)) {
    if (w == "fp32")
      out.push_back(dtype::fp32);
    else if (w == "fp16")
      out.push_back(dtype::fp16);
    else if (w == "bf16")
      out.push_back(dtype::bf16);
    else
      throw invalid_input(
          fmt::format("unknown dtype '{}' in the plugin's table", escape_for_message(w)), where);
  }
  return out;
}

std::vector<std::string> split_list(std::string_view list) {
  std::vector<std::string> out;
  std::string cur;
  for (const char c : list) {
    if (c == ',' || c == ' ') {
      if (!cur.empty())
        out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty())
    out.push_back(cur);
  return out;
}

arm_info outside_info(const std::string &name, const protocol &p, std::vector<dtype> dtypes,
                      std::vector<pass_kind> passes, std::string abi, const std::string &sha,
                      const fs::path &file) {
  arm_info a;
  a.name = name;
  a.device = p.device;
  a.op = p.op;
  a.dtypes = std::move(dtypes);
  a.passes = std::move(passes);
  a.has_backward =
      std::find(a.passes.begin(), a.passes.end(), pass_kind::fwd_bwd) != a.passes.end();
  a.abi = std::move(abi);
  a.source_sha256 = sha;
  a.sources = {file.string()};
  a.descriptor = file.string();
  a.max_cols = std::numeric_limits<std::int64_t>::max();
  a.cols_multiple = 1;
  return a;
}

} // namespace outside

namespace {

using namespace outside;

/// A loaded library: never unloaded (its code may still be referenced by what it registered).
struct library {
  void *handle = nullptr;
  const prereg_arm_table *table = nullptr;
};

/// A dlopen that failed: a library the plugin needs that is not here (its own file opened, a
/// dependency did not: "libcudart.so.12: cannot open shared object file") is the environment
/// (exit 5); anything else is the plugin's (exit 2).
error dlopen_failure(const std::string &why, const std::string &key) {
  const std::string text = escape_for_message(why);
  if (why.find("cannot open shared object file") != std::string::npos && !why.starts_with(key))
    return environment_error(
        fmt::format("cannot load plugin: {} (a library it needs is not installed here, or not on "
                    "LD_LIBRARY_PATH)",
                    text),
        key);
  return invalid_input(fmt::format("cannot load plugin: {}", text), key);
}

const library &open_library(const fs::path &path) {
  static std::mutex mu;
  static std::map<std::string, library> open;
  std::lock_guard lock(mu);
  const std::string key = fs::absolute(path).lexically_normal().string();
  if (auto it = open.find(key); it != open.end())
    return it->second;
  std::error_code ec;
  if (!fs::exists(key, ec))
    throw invalid_input(fmt::format("plugin {} does not exist", key), key);
  if (!fs::is_regular_file(key, ec))
    throw invalid_input(fmt::format("plugin {} is not a regular file", key), key);
  install_crash_guard();
  const crash_text crash =
      make_crash_text(fmt::format("plugin {} crashed while loading", escape_for_message(key)));
  crash_scope guard(crash);
  void *h = ::dlopen(key.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char *err = ::dlerror();
    const std::string why = err != nullptr ? err : "dlopen failed";
    throw dlopen_failure(why, key);
  }
  ::dlerror();
  void *sym = ::dlsym(h, "prereg_arms");
  if (sym == nullptr)
    throw invalid_input("plugin exports no prereg_arms() (build it against prereg/arm_abi.h, "
                        "docs/plugins.md)",
                        key);
  prereg_arms_fn fn = nullptr;
  static_assert(sizeof(fn) == sizeof(sym));
  std::memcpy(&fn, &sym, sizeof(fn));
  const prereg_arm_table *t = fn();
  if (t == nullptr)
    throw invalid_input("plugin's prereg_arms() returned no table", key);
  if (t->abi_version != PREREG_ARM_ABI_VERSION)
    throw invalid_input(fmt::format("plugin speaks arm ABI version {}, this prereg speaks {} "
                                    "(rebuild it against this prereg's arm_abi.h)",
                                    t->abi_version, PREREG_ARM_ABI_VERSION),
                        key);
  if (t->arm_count > 4096 || (t->arm_count > 0 && t->arms == nullptr))
    throw invalid_input(fmt::format("plugin's table is malformed ({} arms)", t->arm_count), key);
  for (std::uint32_t i = 0; i < t->arm_count; ++i) {
    const prereg_arm &a = t->arms[i];
    const auto bad = [&](std::string_view what) {
      throw invalid_input(fmt::format("plugin's table entry {} has no {}", i, what), key);
    };
    if (a.name == nullptr || a.name[0] == '\0')
      bad("name");
    if (a.operation == nullptr)
      bad("operation");
    if (a.device == nullptr)
      bad("device");
    if (a.dtypes == nullptr)
      bad("dtypes");
    if (a.passes == nullptr)
      bad("passes");
    if (a.setup == nullptr)
      bad("setup function");
    if (a.step == nullptr)
      bad("step function");
  }
  return open.emplace(key, library{h, t}).first->second;
}

class plugin_instance final : public bound_arm_instance {
public:
  plugin_instance(const prereg_arm &arm, const outside_call &call, crash_text step_crash,
                  crash_text teardown_crash)
      : m_arm(arm), m_set(call), m_alloc(call.alloc), m_step_crash(std::move(step_crash)),
        m_teardown_crash(std::move(teardown_crash)) {
    for (const auto &[name, value] : call.options) {
      m_option_names.push_back(name);
      m_option_values.push_back(value);
    }
    for (const auto &n : m_option_names)
      m_option_ptrs.push_back(n.c_str());
    m_allocator.context = this;
    m_allocator.allocate = [](void *ctx, size_t bytes) -> void * {
      try {
        return static_cast<plugin_instance *>(ctx)->m_alloc->allocate(bytes);
      } catch (...) {
        return nullptr;
      }
    };
    m_allocator.release = [](void *ctx, void *p) {
      if (p != nullptr)
        static_cast<plugin_instance *>(ctx)->m_alloc->release(p);
    };
    m_cell.operation = call.op->name.c_str();
    m_device = call.device;
    m_dtype = std::string(to_string(call.type));
    m_pass = std::string(to_string(call.pass));
    m_cell.device = m_device.c_str();
    m_cell.dtype = m_dtype.c_str();
    m_cell.pass = m_pass.c_str();
    m_cell.rows = call.rows;
    m_cell.cols = call.cols;
    m_cell.eps = call.eps;
    m_cell.tensor_count = m_set.tensors.size();
    m_cell.tensor_names = m_set.names.data();
    m_cell.tensors = m_set.tensors.data();
    m_cell.option_count = m_option_ptrs.size();
    m_cell.option_names = m_option_ptrs.data();
    m_cell.option_values = m_option_values.data();
    m_cell.stream = call.stream;
    m_cell.allocator = &m_allocator;
  }
  void setup(const crash_text &crash) {
    crash_scope guard(crash);
    std::array<char, 512> err{};
    if (m_arm.setup(&m_cell, &m_state, err.data(), err.size()) != 0)
      throw io_error(fmt::format("setup failed: {}", reason(err)));
    m_ready = true;
  }
  ~plugin_instance() override {
    if (m_ready && m_arm.teardown != nullptr) {
      crash_scope guard(m_teardown_crash);
      m_arm.teardown(m_state);
    }
  }
  void step(void *stream) override {
    crash_scope guard(m_step_crash);
    if (m_arm.step(m_state, stream, m_err.data(), m_err.size()) != 0)
      throw io_error(fmt::format("step failed: {}", reason(m_err)));
  }

private:
  static std::string reason(std::array<char, 512> &err) {
    err.back() = '\0';
    std::string s(err.data());
    return s.empty() ? std::string("(no reason given)") : escape_for_message(s);
  }
  const prereg_arm &m_arm;
  dl_set m_set;
  step_allocator *m_alloc;
  crash_text m_step_crash, m_teardown_crash;
  std::vector<std::string> m_option_names;
  std::vector<const char *> m_option_ptrs;
  std::vector<double> m_option_values;
  std::string m_device, m_dtype, m_pass;
  prereg_allocator m_allocator{};
  prereg_cell m_cell{};
  void *m_state = nullptr;
  bool m_ready = false;
  std::array<char, 512> m_err{};
};

class plugin_arm final : public outside_arm {
public:
  plugin_arm(const prereg_arm &arm, arm_info info, std::string arm_id, fs::path file,
             std::string sha)
      : m_arm(arm), m_info(std::move(info)), m_id(std::move(arm_id)), m_file(std::move(file)),
        m_sha(std::move(sha)) {}
  const arm_info &info() const override { return m_info; }
  std::unique_ptr<bound_arm_instance> bind(const outside_call &call) override {
    const std::string label = fmt::format("plugin {}:{}", m_file.string(), m_info.name);
    auto inst = std::make_unique<plugin_instance>(m_arm, call, crash_message(m_id, label, "step"),
                                                  crash_message(m_id, label, "teardown"));
    const crash_text setup_crash = crash_message(m_id, label, "setup");
    inst->setup(setup_crash);
    return inst;
  }
  json environment() const override {
    return {{"kind", "plugin"},
            {"file", m_file.string()},
            {"sha256", m_sha},
            {"name", m_info.name},
            {"abi_version", PREREG_ARM_ABI_VERSION},
            {"memory_billing", "prereg's allocator (prereg_cell.allocator)"}};
  }

private:
  const prereg_arm &m_arm;
  arm_info m_info;
  std::string m_id;
  fs::path m_file;
  std::string m_sha;
};

} // namespace

std::vector<plugin_listing> list_plugin(const fs::path &path) {
  const library &lib = open_library(path);
  std::vector<plugin_listing> out;
  for (std::uint32_t i = 0; i < lib.table->arm_count; ++i) {
    const prereg_arm &a = lib.table->arms[i];
    out.push_back({escape_for_message(a.name), escape_for_message(a.operation),
                   escape_for_message(a.device), escape_for_message(a.dtypes),
                   escape_for_message(a.passes),
                   a.summary ? escape_for_message(a.summary) : std::string()});
  }
  return out;
}

std::shared_ptr<outside_arm> load_plugin_arm(const fs::path &path, const std::string &name,
                                             const protocol &p, const std::string &arm_id) {
  const std::string where = path.string();
  const std::string sha = outside_file_sha256(path, arm_id);
  const library &lib = open_library(path);
  const prereg_arm *found = nullptr;
  std::vector<std::string> names;
  for (std::uint32_t i = 0; i < lib.table->arm_count; ++i) {
    names.push_back(escape_for_message(lib.table->arms[i].name));
    if (name == lib.table->arms[i].name)
      found = &lib.table->arms[i];
  }
  if (found == nullptr)
    throw invalid_input(fmt::format("arm {}: the plugin has no arm '{}' (it has: {})", arm_id,
                                    escape_for_message(name), fmt::join(names, ", ")),
                        where);
  if (p.op != found->operation)
    throw invalid_input(fmt::format("arm {}: plugin arm '{}' computes {}, but the protocol's "
                                    "operation is {}",
                                    arm_id, name, escape_for_message(found->operation), p.op),
                        where);
  if (p.device != found->device)
    throw invalid_input(fmt::format("arm {}: plugin arm '{}' runs on {}, but the protocol's "
                                    "device is {}",
                                    arm_id, name, escape_for_message(found->device), p.device),
                        where);
  std::vector<dtype> dtypes = parse_dtypes(found->dtypes, where);
  if (std::find(dtypes.begin(), dtypes.end(), p.type) == dtypes.end())
    throw invalid_input(fmt::format("arm {}: plugin arm '{}' does not support dtype {} (it "
                                    "supports {})",
                                    arm_id, name, to_string(p.type),
                                    escape_for_message(found->dtypes)),
                        where);
  std::vector<pass_kind> passes;
  for (const auto &w : split_list(found->passes)) {
    if (w == "fwd")
      passes.push_back(pass_kind::fwd);
    else if (w == "fwd+bwd")
      passes.push_back(pass_kind::fwd_bwd);
    else
      throw invalid_input(fmt::format("arm {}: unknown pass '{}' in the plugin's table", arm_id,
                                      escape_for_message(w)),
                          where);
  }
  for (const auto pass : p.passes)
    if (std::find(passes.begin(), passes.end(), pass) == passes.end())
      throw invalid_input(fmt::format("arm {}: plugin arm '{}' does not run pass {}, but the "
                                      "protocol's passes list it",
                                      arm_id, name, to_string(pass)),
                          where);
  arm_info info = outside_info(name, p, std::move(dtypes), std::move(passes), "plugin", sha, path);
  return std::make_shared<plugin_arm>(*found, std::move(info), arm_id, path, sha);
}

} // namespace prereg
