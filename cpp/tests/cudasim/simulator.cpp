/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "simulator.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__SANITIZE_THREAD__)
// The copy engine stands for DMA, which no host thread performs: ThreadSanitizer must not see
// its accesses (a library bug of that kind is what CUDASIM_JITTER_US exposes instead).
extern "C" void AnnotateIgnoreReadsBegin(char const* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(char const* file, int line);
extern "C" void AnnotateIgnoreWritesBegin(char const* file, int line);
extern "C" void AnnotateIgnoreWritesEnd(char const* file, int line);
#define CUDASIM_DMA_BEGIN()                     \
  AnnotateIgnoreReadsBegin(__FILE__, __LINE__); \
  AnnotateIgnoreWritesBegin(__FILE__, __LINE__)
#define CUDASIM_DMA_END()                      \
  AnnotateIgnoreWritesEnd(__FILE__, __LINE__); \
  AnnotateIgnoreReadsEnd(__FILE__, __LINE__)
#else
#define CUDASIM_DMA_BEGIN()
#define CUDASIM_DMA_END()
#endif

namespace cudasim {
namespace {

struct NamedResult {
  CUresult result;
  char const* name;
};

constexpr NamedResult named_results[] = {
#define CUDASIM_RESULT(name) {name, #name},
#include "cuda_result_names.inc"
#undef CUDASIM_RESULT
};

[[noreturn]] void bad_knob(char const* variable, std::string const& value, char const* expected)
{
  std::fprintf(stderr, "[cudasim] %s=%s: expected %s\n", variable, value.c_str(), expected);
  std::abort();
}

std::uint64_t knob_number(char const* variable, std::uint64_t fallback, std::uint64_t max)
{
  char const* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') { return fallback; }
  char* end    = nullptr;
  auto const v = std::strtoull(text, &end, 10);
  if (*end != '\0' || v > max || text[0] == '-') {
    bad_knob(variable, text, "a non-negative integer");
  }
  return v;
}

}  // namespace

// "cuMemAlloc_v2" and "cuMemAlloc" name the same entry point.
std::string unversioned_name(std::string name)
{
  auto const v = name.rfind("_v");
  if (v != std::string::npos && v + 2 < name.size() &&
      name.find_first_not_of("0123456789", v + 2) == std::string::npos) {
    name.resize(v);
  }
  return name;
}

namespace {

std::vector<Knobs::FailRule> parse_fail_rules()
{
  std::vector<Knobs::FailRule> rules;
  char const* text = std::getenv("CUDASIM_FAIL");
  if (text == nullptr) { return rules; }
  std::string rest = text;
  while (!rest.empty()) {
    auto const sep         = rest.find_first_of(";,");
    std::string const rule = rest.substr(0, sep);
    rest                   = sep == std::string::npos ? "" : rest.substr(sep + 1);
    if (rule.empty()) { continue; }
    auto const c1 = rule.find(':');
    auto const c2 = c1 == std::string::npos ? c1 : rule.find(':', c1 + 1);
    if (c2 == std::string::npos) {
      bad_knob("CUDASIM_FAIL", text, "<entry point>:<nth call>:<CUresult name>[;...]");
    }
    Knobs::FailRule r;
    r.entry        = unversioned_name(rule.substr(0, c1));
    auto const nth = rule.substr(c1 + 1, c2 - c1 - 1);
    char* end      = nullptr;
    r.nth          = std::strtoull(nth.c_str(), &end, 10);
    if (nth.empty() || *end != '\0' || r.nth == 0) {
      bad_knob(
        "CUDASIM_FAIL", text, "a call number >= 1 in <entry point>:<nth call>:<CUresult name>");
    }
    if (!result_from_name(rule.substr(c2 + 1), r.result)) {
      bad_knob("CUDASIM_FAIL", text, "a CUresult name such as CUDA_ERROR_OUT_OF_MEMORY");
    }
    rules.push_back(r);
  }
  return rules;
}

}  // namespace

char const* result_name(CUresult result)
{
  for (auto const& r : named_results) {
    if (r.result == result) { return r.name; }
  }
  return nullptr;
}

bool result_from_name(std::string const& name, CUresult& result)
{
  for (auto const& r : named_results) {
    if (name == r.name) {
      result = r.result;
      return true;
    }
  }
  return false;
}

Simulator::Simulator()
{
  knobs_.devices     = static_cast<int>(knob_number("CUDASIM_DEVICES", 1, 64));
  knobs_.delay_us    = static_cast<unsigned>(knob_number("CUDASIM_DELAY_US", 0, 10'000'000));
  knobs_.max_pending = knob_number("CUDASIM_MAX_PENDING", 1024, 1'000'000'000);
  knobs_.jitter_us   = static_cast<unsigned>(knob_number("CUDASIM_JITTER_US", 0, 10'000'000));
  knobs_.seed        = knob_number("CUDASIM_SEED", 1, UINT64_MAX);
  knobs_.hw_queues   = knob_number("CUDASIM_HW_QUEUES", 0, 1024);
  knobs_.numa_nodes  = static_cast<int>(knob_number("CUDASIM_NUMA_NODES", 1, 64));
  if (knobs_.numa_nodes == 0) { bad_knob("CUDASIM_NUMA_NODES", "0", "at least 1"); }
  knobs_.reuse_context_handles = knob_number("CUDASIM_REUSE_CONTEXT_HANDLES", 0, 1) == 1;
  for (std::size_t i = 0; i < knobs_.hw_queues; ++i) {
    hw_queues.push_back(std::make_unique<HardwareQueue>());
  }
  knobs_.fail_rules = parse_fail_rules();
  primary.assign(static_cast<std::size_t>(knobs_.devices), nullptr);
}

Simulator& Simulator::get()
{
  // Never destroyed: stream workers and late callers may still use it during exit.
  static Simulator* const instance = new Simulator();
  return *instance;
}

CUresult Simulator::enter(char const* entry, bool needs_init)
{
  if (in_host_function()) {
    return misuse(
      entry, "a CUDA call inside a host function (cuLaunchHostFunc)", CUDA_ERROR_NOT_PERMITTED);
  }
  if (!knobs_.fail_rules.empty()) {
    std::string const name = unversioned_name(entry);
    std::uint64_t count    = 0;
    for (auto const& rule : knobs_.fail_rules) {
      if (rule.entry != name) { continue; }
      if (count == 0) {
        std::lock_guard const lock{counts_mutex_};
        count = ++call_counts_[name];
      }
      if (rule.nth == count) {
        std::fprintf(stderr,
                     "[cudasim] injected %s into call %llu of %s\n",
                     result_name(rule.result),
                     static_cast<unsigned long long>(count),
                     name.c_str());
        return rule.result;
      }
    }
  }
  if (tracing.load(std::memory_order_relaxed) || armed.load(std::memory_order_relaxed)) {
    std::string const name = unversioned_name(entry);
    std::lock_guard const lock{counts_mutex_};
    if (tracing.load()) { ++traced[name]; }
    if (armed.load() && name == armed_entry && --armed_left == 0) {
      armed = false;
      std::fprintf(stderr, "[cudasim] injected %s into %s\n", result_name(armed_result), entry);
      return armed_result;
    }
  }
  if (needs_init && !initialized()) { return CUDA_ERROR_NOT_INITIALIZED; }
  return CUDA_SUCCESS;
}

CUresult Simulator::misuse(char const* entry, std::string const& why, CUresult result)
{
  std::fprintf(stderr, "[cudasim] misuse: %s: %s -> %s\n", entry, why.c_str(), result_name(result));
  return result;
}

std::vector<CUctx_st*>& Simulator::context_stack()
{
  thread_local std::vector<CUctx_st*> stack;
  return stack;
}

CUctx_st* Simulator::current_context()
{
  auto& stack = context_stack();
  return stack.empty() ? nullptr : stack.back();
}

Allocation* Simulator::find(std::uintptr_t ptr, std::size_t nbytes)
{
  auto it = allocations.upper_bound(ptr);
  if (it == allocations.begin()) { return nullptr; }
  --it;
  auto& a = it->second;
  if (ptr < a.base || ptr >= a.base + a.size) { return nullptr; }
  if (nbytes > a.base + a.size - ptr) { return nullptr; }
  return &a;
}

void Simulator::notify_progress()
{
  {
    std::lock_guard const lock{progress_mutex_};
  }
  progress_cv_.notify_all();
}

void Simulator::wait_until(std::function<bool()> const& done)
{
  std::unique_lock lock{progress_mutex_};
  while (!done()) {
    // The timeout also covers progress made by other processes (interprocess events).
    progress_cv_.wait_for(lock, std::chrono::microseconds(500));
  }
}

bool& in_host_function()
{
  thread_local bool flag = false;
  return flag;
}

void dma_copy(void* dst, void const* src, std::size_t nbytes)
{
  if (nbytes == 0) { return; }  // a zero-byte copy may come with null pointers
  CUDASIM_DMA_BEGIN();
  std::memmove(dst, src, nbytes);
  CUDASIM_DMA_END();
}

void dma_set(void* dst, unsigned char value, std::size_t nbytes)
{
  if (nbytes == 0) { return; }
  CUDASIM_DMA_BEGIN();
  std::memset(dst, value, nbytes);
  CUDASIM_DMA_END();
}

}  // namespace cudasim

// For tests (dlsym), at run time where CUDASIM_FAIL is fixed at load.

/// Starts (on != 0: from zero) or stops counting the calls of every entry point.
extern "C" void cudasim_trace_calls(int on)
{
  auto& sim = cudasim::Simulator::get();
  std::lock_guard const lock{sim.counts_mutex()};
  if (on != 0) { sim.traced.clear(); }
  sim.tracing = on != 0;
}

/// The calls counted, as "name count" lines (names without version suffixes), into `out` (at
/// most `capacity` bytes with the terminating zero); returns the length the whole text needs.
extern "C" std::size_t cudasim_traced_calls(char* out, std::size_t capacity)
{
  auto& sim = cudasim::Simulator::get();
  std::string text;
  {
    std::lock_guard const lock{sim.counts_mutex()};
    for (auto const& [name, count] : sim.traced) {
      text += name + " " + std::to_string(count) + "\n";
    }
  }
  if (capacity > 0) {
    std::size_t const n = std::min(text.size(), capacity - 1);
    std::memcpy(out, text.data(), n);
    out[n] = '\0';
  }
  return text.size();
}

/// Arms one failure: the `nth` call of `entry` from now returns `result` (a null `entry`
/// disarms). Returns whether an armed failure was still pending (it is replaced).
extern "C" int cudasim_fail_call(char const* entry, unsigned long long nth, int result)
{
  auto& sim = cudasim::Simulator::get();
  std::lock_guard const lock{sim.counts_mutex()};
  int const pending = sim.armed.load() ? 1 : 0;
  sim.armed         = entry != nullptr && nth > 0;
  if (sim.armed) {
    sim.armed_entry  = cudasim::unversioned_name(entry);
    sim.armed_left   = nth;
    sim.armed_result = static_cast<CUresult>(result);
  }
  return pending;
}
