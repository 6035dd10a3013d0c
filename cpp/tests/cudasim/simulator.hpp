/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The CUDA driver simulator's state: devices, contexts, memory, streams, events, knobs.
 * Handles given to callers (CUcontext, CUstream, CUevent) point to the structs defined here
 * and are checked against a registry before use, so a stale or foreign handle is an error,
 * never a crash.
 */
#pragma once

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <cuda.h>

namespace cudasim {

/// A counter that reaches targets: stream progress and event completion are both one.
struct Progress {
  std::atomic<std::uint64_t> value{0};
};

/// Where an event's state lives: on the heap, or in shared memory for interprocess events.
/// Records may complete out of order (an event re-recorded on a faster stream): `completed`
/// moves only over records that have all executed, so a wait for a record never passes before
/// it (stricter than the driver, which waits for that record alone).
struct EventState {
  static constexpr std::uint64_t window = 256;  // records pending at once, at most
  std::atomic<std::uint64_t> recorded{0};       // records issued
  std::atomic<std::uint64_t> completed{0};      // every record up to this one has executed
  std::atomic<std::int64_t> timestamp_ns{0};
  std::atomic<std::uint64_t> executed[window]{};  // record n executed: executed[n % window] == n
};

/// Something an operation must wait for before it runs.
struct Wait {
  std::shared_ptr<void const> keep_alive;
  std::atomic<std::uint64_t> const* counter;
  std::uint64_t target;
};

struct Operation {
  std::function<void()> run;
  std::vector<Wait> waits;
  std::uint64_t seq{};
  bool host_function{false};
  // Runs once the stream's progress counts this operation as done (event records: whoever sees
  // the event complete must also see the stream's earlier work complete).
  std::function<void()> after{};
};

}  // namespace cudasim

struct CUstream_st;

struct CUctx_st {
  CUctx_st(int device_, bool primary_, unsigned int flags_)
    : device{device_}, primary{primary_}, flags{flags_}, id{next_id()}
  {
  }
  int device;
  bool primary;
  unsigned int flags;
  unsigned long long id;  // unique in the process, as cuCtxGetId's (a handle may be reused)
  int primary_refcount{0};
  CUstream_st* legacy_stream{nullptr};  // created on first use
  std::set<CUstream_st*> streams;       // every stream of this context, legacy included

 private:
  static unsigned long long next_id()
  {
    static std::atomic<unsigned long long> last{0};
    return ++last;
  }
};

namespace cudasim {
/// A hardware queue that several streams share: their operations run one at a time, in the
/// order they were enqueued, so an operation that waits holds up the other streams' work behind
/// it (the false dependencies of a GPU's limited connections, CUDA_DEVICE_MAX_CONNECTIONS).
struct HardwareQueue {
  std::mutex mutex;
  std::deque<std::pair<CUstream_st const*, std::uint64_t>> tickets;  // (stream, seq) in order
};
}  // namespace cudasim

struct CUstream_st {
  CUctx_st* ctx;
  cudasim::HardwareQueue* hw_queue{nullptr};  // null: the stream has a queue of its own
  bool legacy;
  bool nonblocking;
  std::shared_ptr<cudasim::Progress> progress{std::make_shared<cudasim::Progress>()};
  std::uint64_t enqueued{0};  // guarded by mutex
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<cudasim::Operation> queue;  // front is running or next
  bool stopping{false};
  std::thread worker;
  std::mt19937_64 rng;
};

struct CUevent_st {
  CUctx_st* ctx;
  unsigned int flags;
  std::shared_ptr<cudasim::EventState> state;
  int memfd{-1};  // interprocess events: the shared-memory file holding `state`
};

namespace cudasim {

/// One allocation the driver knows: device memory, pinned or registered host memory, or device
/// memory of another process opened through IPC.
struct Allocation {
  enum class Kind { device, pinned, registered, ipc_opened };
  Kind kind;
  std::uintptr_t base;
  std::size_t size;
  std::byte* bytes;  // where the simulator reads and writes them
  std::size_t mapped_size;
  int memfd;  // device memory: the shared-memory file behind it; else -1
  CUctx_st* ctx;
  int device;
  std::uint64_t buffer_id;
  std::uint64_t ipc_buffer_id{0};  // ipc_opened: the exporter's buffer id
  int ipc_pid{0};                  // ipc_opened: the exporter
};

/// Knobs read from CUDASIM_* at load.
struct Knobs {
  int devices{1};
  unsigned delay_us{0};
  std::size_t max_pending{1024};  // operations a stream holds before enqueuing waits
  unsigned jitter_us{0};
  std::uint64_t seed{1};
  std::size_t hw_queues{0};  // hardware queues the streams share; 0: each stream its own
  int numa_nodes{1};         // host nodes; device d is closest to node d * numa_nodes / devices
  bool reuse_context_handles{false};  // a new context takes a destroyed one's handle
  struct FailRule {
    std::string entry;  // unversioned name, e.g. cuMemAlloc
    std::uint64_t nth;  // 1-based call number
    CUresult result;
  };
  std::vector<FailRule> fail_rules;
};

class Simulator {
 public:
  static Simulator& get();

  Knobs const& knobs() const { return knobs_; }

  // Entry guard: host-function misuse, injected failures, initialisation.
  CUresult enter(char const* entry, bool needs_init = true);
  // As the real driver: in a child of fork() whose parent initialized it, every call that needs
  // initialization fails with CUDA_ERROR_NOT_INITIALIZED, cuInit too.
  bool initialized() const { return initialized_.load() && initialized_by_ == ::getpid(); }
  bool forked_after_init() const { return initialized_.load() && initialized_by_ != ::getpid(); }
  void initialize()
  {
    initialized_by_ = ::getpid();
    initialized_    = true;
  }

  // Misuse the real driver would reject or leaves undefined: logged on stderr.
  CUresult misuse(char const* entry, std::string const& why, CUresult result);

  // Contexts and the calling thread's stack.
  std::mutex mutex;  // guards everything below and every context, allocation and registry
  std::vector<CUctx_st*> primary;  // one per device, created on first retain
  std::set<CUctx_st*> contexts;
  // Kept so a stale handle never matches a new context, unless CUDASIM_REUSE_CONTEXT_HANDLES.
  std::set<CUctx_st*> destroyed_contexts;
  std::set<CUstream_st*> streams;
  std::set<CUstream_st*> draining_streams;  // destroyed, still finishing their work
  std::set<CUevent_st*> events;
  std::map<std::uintptr_t, Allocation> allocations;       // by base address
  std::vector<std::unique_ptr<HardwareQueue>> hw_queues;  // CUDASIM_HW_QUEUES of them
  std::uint64_t next_buffer_id{1};

  static std::vector<CUctx_st*>& context_stack();
  CUctx_st* current_context();

  // The allocation containing [ptr, ptr + nbytes), or null. Caller holds `mutex`.
  Allocation* find(std::uintptr_t ptr, std::size_t nbytes = 1);

  // Progress notifications: every completion wakes the waiters, which re-check their condition.
  void notify_progress();
  void wait_until(std::function<bool()> const& done);

 private:
  Simulator();
  Knobs knobs_;
  std::atomic<bool> initialized_{false};
  std::atomic<pid_t> initialized_by_{0};
  std::mutex counts_mutex_;
  std::map<std::string, std::uint64_t> call_counts_;

 public:
  // Set by tests at run time (cudasim_trace_calls, cudasim_fail_call): the calls of each entry
  // point since tracing began, and one armed failure.
  std::atomic<bool> tracing{false};
  std::map<std::string, std::uint64_t> traced;  // under counts_mutex()
  std::atomic<bool> armed{false};
  std::string armed_entry;     // under counts_mutex()
  std::uint64_t armed_left{};  // calls to go, the failing one included
  CUresult armed_result{};
  std::mutex& counts_mutex() { return counts_mutex_; }
  std::mutex progress_mutex_;
  std::condition_variable progress_cv_;
};

/// True while a stream worker runs a host function (cuLaunchHostFunc) on this thread.
bool& in_host_function();

/// An entry point's name without its version suffix ("cuMemAlloc_v2" -> "cuMemAlloc").
std::string unversioned_name(std::string name);

/// Name of a CUresult ("CUDA_ERROR_INVALID_VALUE"), or null if unknown.
char const* result_name(CUresult result);
/// CUresult of a name, or false if unknown.
bool result_from_name(std::string const& name, CUresult& result);

// Streams (stream.cpp).
CUstream_st* create_stream(CUctx_st* ctx, bool legacy, bool nonblocking);  // caller holds mutex
/// The stream a handle means: 0 and CU_STREAM_LEGACY are the current context's legacy stream.
/// Caller holds mutex; null (with `result` set) if the handle is invalid.
CUstream_st* resolve_stream(CUstream handle, char const* entry, CUresult& result);
/// Queues an operation after its implicit dependencies (legacy-stream ordering). Caller holds
/// mutex. Returns the operation's sequence number on that stream.
std::uint64_t enqueue(CUstream_st* stream, Operation op);
/// Blocks until `stream` has run everything up to `seq`.
void wait_for(CUstream_st* stream, std::uint64_t seq);
/// Blocks until every stream of `ctx` (all contexts if null) is idle.
void synchronize_streams(CUctx_st* ctx);
/// Stops a stream's worker after its queue drains and frees it. The caller has moved it from
/// `streams` to `draining_streams` (under mutex) and must not hold mutex now.
void destroy_stream(CUstream_st* stream);

/// Event state in a shared-memory file, for interprocess events (api_ipc.cpp).
CUresult create_shared_event_state(std::shared_ptr<EventState>& state, int& fd);

/// Unmaps an allocation's memory (the table entry is the caller's). Caller holds mutex.
void unmap_allocation(Allocation const& allocation);

/// The copy engine: moves bytes as DMA would, invisible to ThreadSanitizer.
void dma_copy(void* dst, void const* src, std::size_t nbytes);
void dma_set(void* dst, unsigned char value, std::size_t nbytes);

}  // namespace cudasim

/// For the few entry points that work before cuInit (errors, version, cuInit itself).
#define CUDASIM_ENTER_NO_INIT(name)                                                      \
  do {                                                                                   \
    CUresult const cudasim_enter_result_ = cudasim::Simulator::get().enter(name, false); \
    if (cudasim_enter_result_ != CUDA_SUCCESS) { return cudasim_enter_result_; }         \
  } while (0)

/// Every entry point starts with this: refuses calls from host functions, injects failures and
/// requires cuInit.
#define CUDASIM_ENTER(name)                                                       \
  do {                                                                            \
    CUresult const cudasim_enter_result_ = cudasim::Simulator::get().enter(name); \
    if (cudasim_enter_result_ != CUDA_SUCCESS) { return cudasim_enter_result_; }  \
  } while (0)
