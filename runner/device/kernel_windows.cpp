// The kernel clock's records cut into timed windows and named regions (kernel_windows.hpp).
#include "device/kernel_windows.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace prereg {

mark_kind mark_of(const char *name) {
  if (name == nullptr || std::strstr(name, "prereg_") == nullptr)
    return mark_kind::none;
  if (std::strstr(name, "prereg_window_open") != nullptr)
    return mark_kind::window_open;
  if (std::strstr(name, "prereg_window_close") != nullptr)
    return mark_kind::window_close;
  if (std::strstr(name, "prereg_region_open") != nullptr)
    return mark_kind::region_open;
  if (std::strstr(name, "prereg_region_close") != nullptr)
    return mark_kind::region_close;
  return mark_kind::none;
}

namespace {

/// The union of intervals that arrive by start time: [lo, hi] is the run still open.
struct running_union {
  bool any = false;
  std::uint64_t lo = 0, hi = 0;
  double closed_ms = 0;
  void add(std::uint64_t start, std::uint64_t end) {
    if (!any || start > hi) {
      if (any)
        closed_ms += static_cast<double>(hi - lo) * 1e-6;
      lo = start;
      hi = end;
      any = true;
    } else {
      hi = std::max(hi, end);
    }
  }
  [[nodiscard]] double total_ms() const {
    return closed_ms + (any ? static_cast<double>(hi - lo) * 1e-6 : 0.0);
  }
};

struct region_state {
  std::uint64_t lo = 0;                                         ///< the open mark's end
  std::uint64_t hi = std::numeric_limits<std::uint64_t>::max(); ///< the close mark's start
  running_union kernels;
};

struct window_state {
  std::uint64_t lo = 0, hi = 0; ///< open mark's end, close mark's start
  running_union kernels;
  std::vector<region_state> regions; ///< in open-mark order
  std::vector<std::size_t> open;     ///< indices of regions still open, innermost last
  bool regions_ok = true;
};

/// Drops records without a valid end and sorts the rest by start; returns each one's mark.
std::vector<mark_kind> sort_events(std::vector<kernel_event> &events) {
  events.erase(std::remove_if(events.begin(), events.end(),
                              [](const kernel_event &e) { return e.end == 0 || e.end < e.start; }),
               events.end());
  std::stable_sort(events.begin(), events.end(),
                   [](const kernel_event &a, const kernel_event &b) { return a.start < b.start; });
  std::vector<mark_kind> kind(events.size());
  for (std::size_t i = 0; i < events.size(); ++i)
    kind[i] = mark_of(events[i].name);
  return kind;
}

/// The windows: each open mark with the first close mark after it.
std::vector<window_state> find_windows(const std::vector<kernel_event> &events,
                                       const std::vector<mark_kind> &kind) {
  std::vector<window_state> ws;
  bool opened = false;
  std::uint64_t open_end = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (kind[i] == mark_kind::window_open) {
      opened = true;
      open_end = events[i].end;
    } else if (kind[i] == mark_kind::window_close && opened) {
      ws.push_back({});
      ws.back().lo = open_end;
      ws.back().hi = events[i].start;
      opened = false;
    }
  }
  return ws;
}

/// A region mark inside window `w`: an open starts a region, a close ends the innermost one.
void add_region_mark(window_state &w, mark_kind kind, const kernel_event &e) {
  if (kind == mark_kind::region_open) {
    w.regions.push_back({});
    w.regions.back().lo = e.end;
    w.open.push_back(w.regions.size() - 1);
  } else if (w.open.empty()) {
    w.regions_ok = false; // a close without its open
  } else {
    w.regions[w.open.back()].hi = e.start;
    w.open.pop_back();
  }
}

/// An arm's kernel `e` counted in window `w` (its facts `k`) and in every region around it.
void add_kernel(window_state &w, window_kernels &k, const kernel_event &e,
                const std::function<std::string(const char *)> &display) {
  ++k.count;
  if (e.graph)
    ++k.graph_count;
  w.kernels.add(e.start, e.end);
  for (region_state &r : w.regions)
    if (e.end > r.lo && e.start < r.hi)
      r.kernels.add(e.start, e.end);
  const std::string name = display(e.name);
  auto it = std::find_if(k.names.begin(), k.names.end(),
                         [&](const window_kernels::by_name &n) { return n.name == name; });
  if (it == k.names.end()) {
    k.names.push_back({name, 0, 0.0});
    it = k.names.end() - 1;
  }
  ++it->calls;
  it->ms += static_cast<double>(e.end - e.start) * 1e-6;
}

/// Every non-window-mark record given to the window it lies in: region marks to the window
/// they start in (none: a warm-up's or a capture's, not ours), kernels to the one they overlap.
void assign_events(const std::vector<kernel_event> &events, const std::vector<mark_kind> &kind,
                   std::vector<window_state> &ws, std::vector<window_kernels> &out,
                   const std::function<std::string(const char *)> &display) {
  std::size_t first = 0; // windows are disjoint and sorted: a sliding start
  for (std::size_t i = 0; i < events.size(); ++i) {
    const kernel_event &e = events[i];
    if (kind[i] == mark_kind::window_open || kind[i] == mark_kind::window_close)
      continue;
    while (first < ws.size() && ws[first].hi <= e.start)
      ++first; // events come by start time: no later one can overlap that window
    if (kind[i] == mark_kind::region_open || kind[i] == mark_kind::region_close) {
      if (first == ws.size() || e.start < ws[first].lo)
        continue; // a region mark outside every window (a warm-up's, or a capture's): not ours
      add_region_mark(ws[first], kind[i], e);
      continue;
    }
    for (std::size_t wi = first; wi < ws.size() && ws[wi].lo < e.end; ++wi) {
      if (!(e.end > ws[wi].lo && e.start < ws[wi].hi))
        continue;
      add_kernel(ws[wi], out[wi], e, display);
      break; // a kernel belongs to one window (they are disjoint)
    }
  }
}

/// Each window's kernel union, and its regions' when their marks paired.
void total_windows(const std::vector<window_state> &ws, std::vector<window_kernels> &out) {
  for (std::size_t wi = 0; wi < ws.size(); ++wi) {
    const window_state &w = ws[wi];
    out[wi].kernel_ms = w.kernels.total_ms();
    out[wi].regions_ok = w.regions_ok && w.open.empty();
    if (out[wi].regions_ok)
      for (const region_state &r : w.regions)
        out[wi].region_kernel_ms.push_back(r.kernels.total_ms());
  }
}

} // namespace

std::vector<window_kernels>
segment_windows(std::vector<kernel_event> &events,
                const std::function<std::string(const char *)> &display) {
  const std::vector<mark_kind> kind = sort_events(events);
  std::vector<window_state> ws = find_windows(events, kind);
  std::vector<window_kernels> out(ws.size());
  assign_events(events, kind, ws, out, display);
  total_windows(ws, out);
  // Records after the last close mark belong to windows still to come: keep only them.
  // (None found: the records were of no window, and are dropped.)
  if (ws.empty()) {
    events.clear();
    return out;
  }
  const std::uint64_t last = ws.back().hi;
  events.erase(std::remove_if(events.begin(), events.end(),
                              [&](const kernel_event &e) { return e.start <= last; }),
               events.end());
  return out;
}

std::optional<std::map<std::string, double>>
region_kernel_sums(const std::vector<std::string> &labels,
                   const std::vector<double> &region_kernel_ms) {
  if (labels.size() != region_kernel_ms.size())
    return std::nullopt;
  std::map<std::string, double> out;
  for (std::size_t i = 0; i < labels.size(); ++i)
    out[labels[i]] += region_kernel_ms[i];
  return out;
}

} // namespace prereg
