// Tests of the measuring side's pipe format: the raw run's JSON round trip and the parent's
// strict validation of what a (possibly hostile) measuring process sends; the sandbox's walls,
// put up in a forked child, and their probes (issue 43).
#include "base/process.hpp"
#include "prereg/error.hpp"
#include "run/channel.hpp"
#include "run/isolate.hpp"
#include "run/sandbox.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>

using namespace prereg;

namespace {

const std::vector<cell_key> planned{{"a", pass_kind::fwd, 4, 8}, {"b", pass_kind::fwd_bwd, 4, 8}};

raw_run sample_run() {
  raw_run r;
  r.environment = {{"device_name", "fake"}, {"off_window_idle_ms", 0.01}};
  r.instrument.ceiling_gbps = 1000;
  r.instrument.ceiling_samples_gbps = {999, 1000.5};
  r.instrument.ceiling_bytes = 1 << 20;
  r.instrument.launch_floor_ms = 0.001;
  r.instrument.timer_resolution_ms = 1e-6;
  r.instrument.flush_bytes = 64;
  r.instrument.flush_method = "read-sweep";
  r.instrument.llc_bytes = 32;
  cell_record a;
  a.key = planned[0];
  a.samples_ms = {0.1, 0.30000000000000004, 1e-9};
  a.peak_bytes = 4096;
  a.clock_mhz = 1980.5;
  a.first_call_ms = 12.25;
  a.warmup_calls = 3;
  a.off_window_ms = 0.5;
  a.spot_checks = 2;
  a.input_mutated =
      "timed sample 0: x: element 1 (row 0, col 1) was 1 before the call and 2 after it";
  a.regions_ms["mlp"] = {0.05, 0.1, 0.0};
  a.region_kernels_ms["mlp"] = {0.01, 0.02, 0.0};
  cell_record b;
  b.key = planned[1];
  b.error = "measurement: planted";
  r.cells = {a, b};
  r.correctness = {{planned[0], 1e-7, 2e-7, false, true, ""},
                   {planned[1], std::numeric_limits<double>::infinity(), 0.5, true, false, "y: x"}};
  r.deviations = {{{"kind", "cell-skipped"},
                   {"cell", {{"arm", "b"}, {"pass", "fwd+bwd"}, {"rows", 4}, {"cols", 8}}},
                   {"message", "m"}}};
  return r;
}

std::string rejection(const json &j) {
  try {
    (void)raw_from_json(j, planned);
  } catch (const error &e) {
    CHECK(e.code() == exit_code::failure);
    return e.what();
  }
  return "accepted";
}

} // namespace

TEST_CASE("isolate: the raw run crosses the pipe unchanged (NaN and inf as null)") {
  const raw_run r = sample_run();
  const json j = json::parse(raw_to_json(r).dump());
  const raw_run back = raw_from_json(j, planned);
  REQUIRE(back.cells.size() == 2);
  CHECK(back.cells[0].samples_ms == r.cells[0].samples_ms); // bit for bit
  CHECK(back.cells[0].clock_mhz == 1980.5);
  CHECK(back.cells[0].first_call_ms == 12.25);
  CHECK(back.cells[0].warmup_calls == 3);
  CHECK(back.cells[0].off_window_ms == 0.5);
  CHECK(back.cells[0].spot_checks == 2);
  CHECK(back.cells[0].input_mutated == r.cells[0].input_mutated);
  CHECK(back.cells[0].regions_ms == r.cells[0].regions_ms);
  CHECK(back.cells[0].region_kernels_ms == r.cells[0].region_kernels_ms);
  CHECK(back.cells[1].region_kernels_ms.empty());
  CHECK(std::isnan(back.cells[1].clock_mhz));
  CHECK(std::isnan(back.cells[1].off_window_ms));
  CHECK(back.cells[1].error == r.cells[1].error);
  CHECK_FALSE(back.cells[1].input_mutated.has_value());
  CHECK(std::isnan(back.correctness[1].max_abs_error)); // inf became null
  CHECK(back.correctness[1].detail == "y: x");
  CHECK(back.instrument.ceiling_samples_gbps == r.instrument.ceiling_samples_gbps);
  CHECK(std::isnan(back.instrument.clock_start_mhz));
  CHECK(back.environment == r.environment);
  CHECK(back.deviations == r.deviations);
  CHECK(raw_to_json(back) == raw_to_json(r));
}

TEST_CASE("isolate: the parent rejects a raw run it did not plan or cannot trust") {
  const json good = raw_to_json(sample_run());
  CHECK(rejection(good) == "accepted");
  const auto with = [&](auto edit) {
    json j = good;
    edit(j);
    return rejection(j);
  };
  const std::string prefix = "the measuring process sent an invalid result: ";
  CHECK(with([](json &j) { j["cells"][0]["key"]["arm"] = "c"; }) ==
        prefix + "raw.cells[0].key is not a planned cell");
  CHECK(with([](json &j) { j["cells"][1] = j["cells"][0]; }) ==
        prefix + "raw.cells[1] repeats a cell");
  CHECK(with([](json &j) { j["cells"][0]["samples_ms"][1] = -1.0; }) ==
        prefix + "raw.cells[0].samples_ms[1] is not a finite time");
  CHECK(with([](json &j) { j["cells"][0]["samples_ms"][1] = nullptr; }) ==
        prefix + "raw.cells[0].samples_ms[1] is not a number");
  CHECK(with([](json &j) { j["cells"][0]["peak_bytes"] = -5; }) ==
        prefix + "raw.cells[0].peak_bytes is not a non-negative integer");
  CHECK(with([](json &j) { j["cells"][0].erase("warmup_calls"); }) ==
        prefix + "raw.cells[0].warmup_calls is missing");
  CHECK(with([](json &j) { j["correctness"][0]["passed"] = "yes"; }) ==
        prefix + "raw.correctness[0] has a non-boolean flag");
  CHECK(with([](json &j) { j["deviations"][0]["kind"] = "arm-excluded"; }) ==
        prefix + "raw.deviations[0].kind is not a deviation the engine records");
  CHECK(with([](json &j) { j["cells"][0]["region_kernels_ms"]["mlp"].erase(0); }) ==
        prefix + "raw.cells[0].region_kernels_ms.mlp is not one time per sample");
  CHECK(with([](json &j) {
          j["cells"][0]["region_kernels_ms"]["attention"] = json::array({0.0, 0.0, 0.0});
        }) ==
        prefix + "raw.cells[0].region_kernels_ms.attention names a region the arm did not time");
  CHECK(with([](json &j) { j["environment"] = 1; }) == prefix + "raw.environment is not an object");
  CHECK(with([](json &j) { j["instrument"].erase("flush_method"); }) ==
        prefix + "raw.instrument.flush_method is missing");
}

// ---- issue 43: the sandbox's walls and their probes ----------------------------------------

namespace {

json isolation_message() {
  return {
      {"layers", {"no-inherited-fds", "user-namespace", "mount-namespace"}},
      {"reason", "a PID namespace is not available (unshare): Operation not permitted"},
      {"probes",
       {{{"name", "read-key"}, {"outcome", "contained"}, {"error", "EACCES"}, {"detail", "x"}}}}};
}

std::string isolation_rejection(const json &j) {
  try {
    (void)detail::read_isolation_message(detail::child_node(j, "isolation"));
  } catch (const error &e) {
    return e.what();
  }
  return "accepted";
}

/// A temporary folder, removed on destruction.
struct scratch_dir {
  std::filesystem::path path;
  scratch_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "prereg-sandbox-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  scratch_dir(const scratch_dir &) = delete;
  scratch_dir &operator=(const scratch_dir &) = delete;
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

/// In a forked child: the sandbox over `paths`, then what the isolated process sees of the
/// key and the store; its message (the facts and what it saw) comes back as JSON.
json sandboxed_child(const detail::sandbox_paths &paths, const std::filesystem::path &cache) {
  pipe_ends up = open_pipe(on_exec::close);
  const pid_t parent = ::getpid();
  const pid_t pid = fork_child([&] {
    up.read.reset();
    ::setenv("XDG_CACHE_HOME", cache.c_str(), 1);
    const detail::isolation_facts facts = detail::enter_sandbox(paths, {up.write.get()}, parent);
    std::string key_bytes;
    if (const int fd = ::open(paths.key.c_str(), O_RDONLY); fd >= 0) {
      char buf[256];
      const ssize_t n = ::read(fd, buf, sizeof buf);
      key_bytes.assign(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
      ::close(fd);
    }
    const int w = ::open((paths.store / "planted").c_str(), O_WRONLY | O_CREAT, 0600);
    // Naming another thread writes /proc/self/task/TID/comm, as the CUDA driver does for the
    // threads it starts (Landlock allows it there only; /proc/PID/comm stays refused).
    std::thread worker([] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); });
    const int named = ::pthread_setname_np(worker.native_handle(), "named");
    worker.join();
    const int comm = ::open("/proc/self/comm", O_WRONLY | O_CLOEXEC);
    std::string oom;
    std::ifstream("/proc/self/oom_score_adj") >> oom;
    const json out = {{"facts", facts.to_json()},   {"key", key_bytes},
                      {"store_writable", w >= 0},   {"pid", ::getpid()},
                      {"thread_named", named == 0}, {"proc_comm_writable", comm >= 0},
                      {"oom_score_adj", oom}};
    (void)write_all(up.write.get(), out.dump());
    std::_Exit(0);
  });
  up.write.reset();
  const std::string text = read_all(up.read.get());
  const wait_status st = wait_for(pid);
  CHECK(st.exited());
  CHECK(st.exit_code() == 0);
  return json::parse(text);
}

} // namespace

TEST_CASE("sandbox: the isolation message is read strictly") {
  CHECK(isolation_rejection(isolation_message()) == "accepted");
  const report_isolation i =
      detail::read_isolation_message(detail::child_node(isolation_message(), "isolation"));
  CHECK(i.probes.size() == 1);
  const std::string prefix = "the measuring process sent an invalid result: ";
  json j = isolation_message();
  j["layers"][1] = "chroot-jail";
  CHECK(isolation_rejection(j) == prefix + "isolation.layers[1] is not an isolation layer");
  j = isolation_message();
  j["layers"][2] = "user-namespace";
  CHECK(isolation_rejection(j) == prefix + "isolation.layers[2] repeats a layer");
  j = isolation_message();
  j["probes"][0]["outcome"] = "skipped";
  CHECK(isolation_rejection(j) ==
        prefix + "isolation.probes[0].outcome is not contained, escaped or not-tried");
  j = isolation_message();
  j["probes"][0]["name"] = "read-everything";
  CHECK(isolation_rejection(j) == prefix + "isolation.probes[0].name is not an isolation probe");
  j = isolation_message();
  j["level"] = "sandboxed"; // the level is the parent's to compute
  CHECK(isolation_rejection(j) ==
        prefix + "isolation.level is not a member of the isolation message");
  report_isolation finished = i;
  detail::finish_isolation(finished, true);
  CHECK(finished.layers.back() == "parent-not-dumpable");
  CHECK(finished.level == "partial");
}

TEST_CASE("sandbox: a process behind the walls: the key reads empty, the store is read-only, and "
          "every probe is contained") {
  scratch_dir tmp;
  const auto root = tmp.path;
  std::filesystem::create_directories(root / "keys");
  std::filesystem::create_directories(root / "project" / ".prereg");
  std::filesystem::create_directories(root / "reports");
  {
    std::ofstream key(root / "keys" / "signing.key");
    key << "-----BEGIN PRIVATE KEY-----\nSANDBOX-TEST-KEY-BYTES\n-----END PRIVATE KEY-----\n";
  }
  // prereg's cache folder (hidden in the sandbox) is $XDG_CACHE_HOME/prereg: the test's own
  const char *old_cache = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old_cache == nullptr ? std::string() : std::string(old_cache);
  ::setenv("XDG_CACHE_HOME", (root / "cache").c_str(), 1);
  const detail::sandbox_paths paths = detail::sandbox_paths_for(
      root / "keys" / "signing.key", root / "project" / ".prereg", root / "reports");
  if (old_cache == nullptr)
    ::unsetenv("XDG_CACHE_HOME");
  else
    ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  const json got = sandboxed_child(paths, root / "cache");
  const json &facts = got.at("facts");
  const auto layers = facts.at("layers").get<std::vector<std::string>>();
  if (std::find(layers.begin(), layers.end(), "user-namespace") == layers.end()) {
    // no user namespaces here (a container's seccomp profile, a sysctl): said, not hidden
    CHECK_FALSE(facts.at("reason").get<std::string>().empty());
    MESSAGE("no user namespaces here: " << facts.at("reason").get<std::string>());
    return;
  }
  CHECK(got.at("key") == "");
  CHECK(got.at("store_writable") == false);
  CHECK(got.at("pid") == 2); // the second process of its own PID namespace
  CHECK(got.at("thread_named") == true);
  CHECK(got.at("oom_score_adj") == "1000"); // the OOM killer's first choice
  if (std::find(layers.begin(), layers.end(), "landlock") != layers.end())
    CHECK(got.at("proc_comm_writable") == false);
  CHECK_FALSE(std::filesystem::exists(root / "project" / ".prereg" / "planted"));
  for (const auto &p : facts.at("probes")) {
    INFO(p.dump());
    CHECK(p.at("outcome") != "escaped");
  }
  report_isolation i = detail::read_isolation_message(detail::child_node(facts, "isolation"));
  detail::finish_isolation(i, true);
  INFO(i.reason);
  CHECK(i.level == "sandboxed");
  CHECK(isolation_problems(i).empty());
  for (const char *layer : {"mounts-locked", "caps-dropped", "no-new-privs", "seccomp",
                            "key-masked", "pid-namespace", "fresh-proc"})
    CHECK(std::find(i.layers.begin(), i.layers.end(), layer) != i.layers.end());
  CHECK(std::filesystem::is_directory(root / "cache" / "prereg")); // made, then hidden
}

TEST_CASE("channel: the first sender is traced to the forked process, even after it exited") {
  CHECK(detail::descends_from(::getpid(), ::getpid(), 3) == std::optional<bool>{true});
  CHECK(detail::descends_from(::getpid(), ::getpid() + 100000, 3) == std::optional<bool>{false});
  const pid_t gone = ::fork();
  if (gone == 0)
    ::_exit(0);
  int status = 0;
  REQUIRE(::waitpid(gone, &status, 0) == gone);
  CHECK_FALSE(detail::descends_from(gone, ::getpid(), 3).has_value());

  // A child writes one line and exits before the reader looks: its chunk is taken.
  auto ends = detail::open_channel();
  const pid_t writer = ::fork();
  if (writer == 0) {
    ends.parent.reset();
    const bool sent = detail::send_all(ends.child.get(), "hello\n");
    ::_exit(sent ? 0 : 1);
  }
  ends.child.reset();
  REQUIRE(::waitpid(writer, &status, 0) == writer);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  detail::channel_reader reader(ends.parent.get(), writer);
  const auto line = reader.next([] {});
  REQUIRE(line.has_value());
  CHECK(*line == "hello");
  CHECK(reader.sender() == writer);
}

TEST_CASE("sandbox: on the CPU device no fault handler can be installed, and asking still works") {
  const pid_t pid = fork_child([] {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || !detail::ban_fault_handlers().empty())
      std::_Exit(10);
    struct sigaction sa {};
    sa.sa_handler = SIG_IGN;
    struct sigaction old {};
    for (const int sig : {SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGSYS}) {
      if (::sigaction(sig, &sa, nullptr) == 0 || errno != EPERM)
        std::_Exit(11); // a handler for a fault went in
      if (::sigaction(sig, nullptr, &old) != 0)
        std::_Exit(12); // asking what is installed is refused
    }
    if (::sigaction(SIGUSR1, &sa, nullptr) != 0)
      std::_Exit(13); // other signals keep their handlers
    std::_Exit(0);
  });
  const wait_status st = wait_for(pid);
  REQUIRE(st.exited());
  CHECK(st.exit_code() == 0);
}
