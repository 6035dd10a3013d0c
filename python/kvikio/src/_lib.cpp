/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * kvikio._lib: the C++ library as the pure-Python modules of `kvikio` need it. Buffers arrive
 * as (address, size) pairs: the Python side reads them out of __cuda_array_interface__ or the
 * buffer protocol and keeps the objects alive. Every call that waits or moves bytes releases the
 * GIL. C++ exceptions map as pybind11 maps them (invalid_argument -> ValueError, out_of_range ->
 * IndexError, overflow_error -> OverflowError, other runtime_error -> RuntimeError), except
 * std::system_error: the OSError subclass open() would raise for its errno (FileNotFoundError,
 * IsADirectoryError, ...), made a RuntimeError too, which upstream raises.
 */
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/buffer.hpp>
#include <kvikio/cufile/driver.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/effective_settings.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/file_utils.hpp>
#include <kvikio/ipc.hpp>
#include <kvikio/mmap.hpp>
#include <kvikio/remote_handle.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/shim/cufile.hpp>
#include <kvikio/stream.hpp>
#include <kvikio/utils.hpp>
#include <kvikio/version_config.hpp>

#include "statistics.hpp"
#include "without_gil.hpp"

namespace py = pybind11;
using kvikio_python::without_gil;

namespace {

void* as_ptr(std::uintptr_t address) { return reinterpret_cast<void*>(address); }

/// `value` as an off_t, which stream-ordered calls take: one past off_t's range is an
/// OverflowError naming it, not a negative offset.
off_t as_offset(std::size_t value, char const* call, char const* which)
{
  if (value > static_cast<std::size_t>(std::numeric_limits<off_t>::max())) {
    throw std::overflow_error(std::string{call} + ": " + which + " " + std::to_string(value) +
                              " is past the largest file offset (2^63-1)");
  }
  return static_cast<off_t>(value);
}
CUstream as_stream(std::uintptr_t handle) { return reinterpret_cast<CUstream>(handle); }

/// A std::future<std::size_t> that Python can wait for from any thread, any number of times.
class Future {
 public:
  explicit Future(std::future<std::size_t> f) : shared_{f.share()} {}
  /// Waits without the GIL, in slices between which Python's signal handlers run: Ctrl-C or an
  /// alarm's handler interrupts the wait with its exception within a slice (the operation goes
  /// on; a later get(), or the future going away, waits for it).
  std::size_t get()
  {
    while (!done()) {
      bool const ready = without_gil([&] {
        return shared_.wait_for(std::chrono::milliseconds(100)) == std::future_status::ready;
      });
      if (ready) { break; }
      if (PyErr_CheckSignals() != 0) { throw py::error_already_set(); }
    }
    return shared_.get();  // ready: returns (or rethrows) without blocking, the GIL kept
  }
  /// Waits for the operation, uninterrupted and without its result: for a future going away.
  void wait() const
  {
    without_gil([&] { shared_.wait(); });
  }
  bool done() const
  {
    return shared_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

 private:
  std::shared_future<std::size_t> shared_;
};

/// A StreamFuture: the operation is ordered on the stream; check_bytes_done() synchronises.
class StreamOp {
 public:
  explicit StreamOp(kvikio::StreamFuture f) : future_{std::move(f)} {}
  std::size_t check_bytes_done()
  {
    wait_for_stream();
    return without_gil([&] { return future_.check_bytes_done(); });
  }

 private:
  /// Waits for the work on the future's stream so far in slices between which Python's signal
  /// handlers run, as Future::get() does: a host function enqueued behind that work fulfils a
  /// promise. Where none can be enqueued, or the stream reports an error, check_bytes_done()'s
  /// synchronisation waits or reports the error.
  void wait_for_stream()
  {
    CUstream stream{};
    void* destination{};
    try {
      std::tie(destination, std::ignore, std::ignore, std::ignore, std::ignore, stream) =
        future_.get_args();
    } catch (kvikio::CUfileException const&) {
      return;  // an empty future: check_bytes_done() says so
    }
    // A default stream is waited for in the context the operation was enqueued in, its
    // destination's, whatever context this thread has.
    std::optional<kvikio::PushAndPopContext> context;
    if (kvikio::detail::is_default_stream(stream) && destination != nullptr) {
      context.emplace(destination);
    }
    auto const& cuda = kvikio::cudaAPI::instance();
    auto const busy  = [&] { return cuda.StreamQuery(stream) == CUDA_ERROR_NOT_READY; };
    if (!without_gil(busy)) { return; }
    auto* reached    = new std::promise<void>();
    auto ended       = reached->get_future();
    CUresult const r = cuda.LaunchHostFunc(
      stream,
      [](void* promise) {
        static_cast<std::promise<void>*>(promise)->set_value();
        delete static_cast<std::promise<void>*>(promise);
      },
      reached);
    if (r != CUDA_SUCCESS) {
      delete reached;
      return;
    }
    // On a stream that fails before the host function runs, it never runs: its promise is left.
    while (!without_gil([&] {
      return ended.wait_for(std::chrono::milliseconds(100)) == std::future_status::ready || !busy();
    })) {
      if (PyErr_CheckSignals() != 0) { throw py::error_already_set(); }
    }
  }

  kvikio::StreamFuture future_;
};

// errno -> the Python exception class of a failed system call (see the file's comment); the
// last entry (errno 0) serves every other errno. Made once, at import, and never freed.
std::vector<std::pair<int, py::object>>* system_error_classes = nullptr;

void register_system_errors(py::module_& m)
{
  auto builtins = py::module_::import("builtins");
  auto make     = [&](char const* base) {
    py::object const type = builtins.attr("type");
    return type(base,
                py::make_tuple(builtins.attr(base), builtins.attr("RuntimeError")),
                py::dict(py::arg("__module__") = "kvikio"));
  };
  system_error_classes =
    new std::vector<std::pair<int, py::object>>{{ENOENT, make("FileNotFoundError")},
                                                {EISDIR, make("IsADirectoryError")},
                                                {ENOTDIR, make("NotADirectoryError")},
                                                {EACCES, make("PermissionError")},
                                                {EPERM, make("PermissionError")},
                                                {EEXIST, make("FileExistsError")},
                                                {0, make("OSError")}};  // every other errno
  m.attr("OSError") = system_error_classes->back().second;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) { std::rethrow_exception(p); }
    } catch (std::system_error const& e) {
      auto& classes  = *system_error_classes;
      int const code = e.code().value();
      auto it        = std::find_if(
        classes.begin(), classes.end(), [&](auto const& c) { return c.first == code; });
      if (it == classes.end()) { it = classes.end() - 1; }
      PyErr_SetObject(it->second.ptr(), py::make_tuple(code, e.what()).ptr());
    }
  });
}

void bind_defaults(py::module_& m)
{
  auto d = m.def_submodule("defaults", "kvikio::defaults, one getter and setter per setting");
  using kvikio::defaults;
  d.def("compat_mode", [] { return static_cast<int>(defaults::compat_mode()); });
  d.def("is_compat_mode_preferred", [] { return defaults::is_compat_mode_preferred(); });
  // (name, variable, configured, effective, why) per setting, as kvikio::effective_settings().
  d.def("effective_settings", [] {
    std::vector<std::tuple<std::string, std::string, std::string, std::string, std::string>> out;
    for (auto& s : kvikio::effective_settings()) {
      out.emplace_back(s.name, s.variable, s.configured, s.effective, s.why);
    }
    return out;
  });
  d.def("set_compat_mode",
        [](int v) { defaults::set_compat_mode(static_cast<kvikio::CompatMode>(v)); });
  d.def("num_threads", &defaults::thread_pool_nthreads);
  d.def("set_num_threads",
        [](unsigned v) { without_gil([&] { defaults::set_thread_pool_nthreads(v); }); });
  // The plain settings, from the library's table: a getter and setter each, and their names
  // with their kind ("integer" or "boolean") for kvikio.defaults.
  py::list plain;
#define KVIKIO_PY_SETTING(name, type, default_value, variables, parse, what) \
  d.def(#name, &defaults::name);                                             \
  d.def("set_" #name, &defaults::set_##name);                                \
  plain.append(py::make_tuple(#name, std::is_same_v<type, bool> ? "boolean" : "integer"));
  KVIKIO_PLAIN_SETTINGS(KVIKIO_PY_SETTING)
#undef KVIKIO_PY_SETTING
  d.attr("plain_settings") = plain;
  d.def("http_status_codes", &defaults::http_status_codes);
  d.def("set_http_status_codes", &defaults::set_http_status_codes);
  d.def("local_io_backend",
        [] { return kvikio::detail::local_io_backend_name(defaults::local_io_backend()); });
  d.def("set_local_io_backend", [](std::string const& v) {
    defaults::set_local_io_backend(kvikio::detail::parse_local_io_backend("local_io_backend", v));
  });
  // Enums cross as their integer values; kvikio.defaults turns them into Python enums.
  d.def("remote_io_backend", [] { return static_cast<int>(defaults::remote_io_backend()); });
  d.def("set_remote_io_backend",
        [](int v) { defaults::set_remote_io_backend(static_cast<kvikio::RemoteIOBackend>(v)); });
  d.def("remote_io_reactor_dispatch",
        [] { return static_cast<int>(defaults::remote_io_reactor_dispatch()); });
  d.def("set_remote_io_reactor_dispatch", [](int v) {
    defaults::set_remote_io_reactor_dispatch(static_cast<kvikio::RemoteReactorDispatch>(v));
  });
}

/// A batch read's requests as the Python side passes them (one list per field) and the C++
/// request type: Future per request, in order. `Request` is {handle, buf, size, file_offset}.
template <typename Request, typename Handle, typename Call>
std::vector<Future> batch_read(std::vector<Handle*> const& handles,
                               std::vector<std::uintptr_t> const& bufs,
                               std::vector<std::size_t> const& sizes,
                               std::vector<std::size_t> const& offsets,
                               std::optional<std::size_t> coalesce_max_gap,
                               std::optional<std::size_t> task_size,
                               Call call)
{
  if (bufs.size() != handles.size() || sizes.size() != handles.size() ||
      offsets.size() != handles.size()) {
    throw std::invalid_argument("batch read: the request lists differ in length");
  }
  std::vector<Request> requests;
  requests.reserve(handles.size());
  for (std::size_t i = 0; i < handles.size(); ++i) {
    requests.push_back({handles[i], as_ptr(bufs[i]), sizes[i], offsets[i]});
  }
  auto futures = without_gil([&] {
    return call(
      requests,
      kvikio::BatchReadOptions{.coalesce_max_gap = coalesce_max_gap, .task_size = task_size});
  });
  std::vector<Future> out;
  out.reserve(futures.size());
  for (auto& f : futures) {
    out.emplace_back(std::move(f));
  }
  return out;
}

void bind_file_handle(py::module_& m)
{
  py::class_<kvikio::FileHandle>(m, "FileHandle")
    .def(py::init([](std::string const& path, std::string const& flags) {
           return std::make_unique<kvikio::FileHandle>(path, flags);
         }),
         py::arg("path"),
         py::arg("flags") = "r")
    // close() waits for the handle's running reads and writes: without the GIL.
    .def("close", [](kvikio::FileHandle& f) { without_gil([&] { f.close(); }); })
    .def("closed", &kvikio::FileHandle::closed)
    .def("fd", &kvikio::FileHandle::fd, py::arg("o_direct") = false)
    .def("fd_open_flags", &kvikio::FileHandle::fd_open_flags, py::arg("o_direct") = false)
    .def("nbytes", &kvikio::FileHandle::nbytes)
    .def("is_direct_io_supported", &kvikio::FileHandle::is_direct_io_supported)
    .def(
      "pread",
      [](kvikio::FileHandle& f,
         std::uintptr_t buf,
         std::size_t size,
         std::size_t offset,
         std::size_t task_size) {
        return Future{without_gil([&] { return f.pread(as_ptr(buf), size, offset, task_size); })};
      })
    .def(
      "pwrite",
      [](kvikio::FileHandle& f,
         std::uintptr_t buf,
         std::size_t size,
         std::size_t offset,
         std::size_t task_size) {
        return Future{without_gil([&] { return f.pwrite(as_ptr(buf), size, offset, task_size); })};
      })
    .def("read_async",
         [](kvikio::FileHandle& f,
            std::uintptr_t buf,
            std::size_t size,
            std::size_t offset,
            std::size_t dev_offset,
            std::uintptr_t stream) {
           return StreamOp{without_gil([&] {
             return f.read_async(as_ptr(buf),
                                 size,
                                 as_offset(offset, "CuFile.read_async", "file offset"),
                                 as_offset(dev_offset, "CuFile.read_async", "device offset"),
                                 as_stream(stream));
           })};
         })
    .def("write_async",
         [](kvikio::FileHandle& f,
            std::uintptr_t buf,
            std::size_t size,
            std::size_t offset,
            std::size_t dev_offset,
            std::uintptr_t stream) {
           return StreamOp{without_gil([&] {
             return f.write_async(as_ptr(buf),
                                  size,
                                  as_offset(offset, "CuFile.write_async", "file offset"),
                                  as_offset(dev_offset, "CuFile.write_async", "device offset"),
                                  as_stream(stream));
           })};
         });
  m.def("file_batch_read",
        [](std::vector<kvikio::FileHandle*> const& handles,
           std::vector<std::uintptr_t> const& bufs,
           std::vector<std::size_t> const& sizes,
           std::vector<std::size_t> const& offsets,
           std::optional<std::size_t> coalesce_max_gap,
           std::optional<std::size_t> task_size) {
          return batch_read<kvikio::FileReadRequest>(
            handles, bufs, sizes, offsets, coalesce_max_gap, task_size, [](auto const& r, auto o) {
              return kvikio::file_batch_read(r, o);
            });
        });
}

void bind_remote(py::module_& m)
{
  py::enum_<kvikio::RemoteEndpointType>(m, "RemoteEndpointType")
    .value("AUTO", kvikio::RemoteEndpointType::AUTO)
    .value("S3", kvikio::RemoteEndpointType::S3)
    .value("S3_PUBLIC", kvikio::RemoteEndpointType::S3_PUBLIC)
    .value("S3_PRESIGNED_URL", kvikio::RemoteEndpointType::S3_PRESIGNED_URL)
    .value("WEBHDFS", kvikio::RemoteEndpointType::WEBHDFS)
    .value("HTTP", kvikio::RemoteEndpointType::HTTP);
  py::class_<kvikio::RemoteHandle>(m, "RemoteHandle")
    .def_static(
      "open",
      [](std::string url,
         kvikio::RemoteEndpointType type,
         std::optional<std::vector<kvikio::RemoteEndpointType>> allow_list,
         std::optional<std::size_t> nbytes) {
        return without_gil([&] {
          return std::make_unique<kvikio::RemoteHandle>(
            kvikio::RemoteHandle::open(std::move(url), type, std::move(allow_list), nbytes));
        });
      },
      py::arg("url"),
      py::arg("type")       = kvikio::RemoteEndpointType::AUTO,
      py::arg("allow_list") = std::nullopt,
      py::arg("nbytes")     = std::nullopt)
    .def_static(
      "open_http",
      [](std::string url, std::optional<std::size_t> nbytes) {
        return without_gil([&] {
          auto endpoint = std::make_unique<kvikio::HttpEndpoint>(std::move(url));
          return nbytes ? std::make_unique<kvikio::RemoteHandle>(std::move(endpoint), *nbytes)
                        : std::make_unique<kvikio::RemoteHandle>(std::move(endpoint));
        });
      },
      py::arg("url"),
      py::arg("nbytes") = std::nullopt)
    .def_static(
      "open_s3",
      [](std::pair<std::string, std::string> bucket_and_object,
         std::optional<std::size_t> nbytes,
         std::optional<std::string> region,
         std::optional<std::string> access_key,
         std::optional<std::string> secret_access_key,
         std::optional<std::string> endpoint_url,
         std::optional<std::string> session_token) {
        return without_gil([&] {
          auto endpoint = std::make_unique<kvikio::S3Endpoint>(std::move(bucket_and_object),
                                                               std::move(region),
                                                               std::move(access_key),
                                                               std::move(secret_access_key),
                                                               std::move(endpoint_url),
                                                               std::move(session_token));
          return nbytes ? std::make_unique<kvikio::RemoteHandle>(std::move(endpoint), *nbytes)
                        : std::make_unique<kvikio::RemoteHandle>(std::move(endpoint));
        });
      })
    .def_static(
      "open_s3_http_url",
      [](std::string url,
         std::optional<std::size_t> nbytes,
         std::optional<std::string> region,
         std::optional<std::string> access_key,
         std::optional<std::string> secret_access_key,
         std::optional<std::string> session_token) {
        return without_gil([&] {
          auto endpoint = std::make_unique<kvikio::S3Endpoint>(std::move(url),
                                                               std::move(region),
                                                               std::move(access_key),
                                                               std::move(secret_access_key),
                                                               std::move(session_token));
          return nbytes ? std::make_unique<kvikio::RemoteHandle>(std::move(endpoint), *nbytes)
                        : std::make_unique<kvikio::RemoteHandle>(std::move(endpoint));
        });
      })
    .def("endpoint_str", [](kvikio::RemoteHandle const& h) { return h.endpoint().str(); })
    .def("nbytes", &kvikio::RemoteHandle::nbytes)
    .def("remote_endpoint_type", &kvikio::RemoteHandle::remote_endpoint_type)
    .def(
      "pread",
      [](kvikio::RemoteHandle& h,
         std::uintptr_t buf,
         std::size_t size,
         std::size_t offset,
         std::size_t task_size) {
        return Future{without_gil([&] { return h.pread(as_ptr(buf), size, offset, task_size); })};
      })
    .def("read_async",
         [](kvikio::RemoteHandle& h,
            std::uintptr_t buf,
            std::size_t size,
            std::size_t offset,
            std::uintptr_t stream) {
           return StreamOp{without_gil(
             [&] { return h.read_async(as_ptr(buf), size, offset, as_stream(stream)); })};
         });
  m.def("remote_batch_read",
        [](std::vector<kvikio::RemoteHandle*> const& handles,
           std::vector<std::uintptr_t> const& bufs,
           std::vector<std::size_t> const& sizes,
           std::vector<std::size_t> const& offsets,
           std::optional<std::size_t> coalesce_max_gap,
           std::optional<std::size_t> task_size) {
          return batch_read<kvikio::RemoteReadRequest>(
            handles, bufs, sizes, offsets, coalesce_max_gap, task_size, [](auto const& r, auto o) {
              return kvikio::remote_batch_read(r, o);
            });
        });
  m.def("infer_remote_endpoint_type", &kvikio::infer_remote_endpoint_type);
  m.def("parse_s3_url", &kvikio::S3Endpoint::parse_s3_url);
}

void bind_mmap_and_buffers(py::module_& m)
{
  py::class_<kvikio::MmapHandle>(m, "MmapHandle")
    .def(py::init([](std::string const& path,
                     std::string const& flags,
                     std::optional<std::size_t> size,
                     std::size_t offset,
                     mode_t mode,
                     std::optional<int> map_flags) {
           return std::make_unique<kvikio::MmapHandle>(path, flags, size, offset, mode, map_flags);
         }),
         py::arg("path"),
         py::arg("flags")              = "r",
         py::arg("initial_map_size")   = std::nullopt,
         py::arg("initial_map_offset") = 0,
         py::arg("mode")               = kvikio::FileHandle::m644,
         py::arg("map_flags")          = std::nullopt)
    .def("initial_map_size", &kvikio::MmapHandle::initial_map_size)
    .def("initial_map_offset", &kvikio::MmapHandle::initial_map_offset)
    .def("file_size", &kvikio::MmapHandle::file_size)
    .def("nbytes", &kvikio::MmapHandle::nbytes)
    .def("closed", &kvikio::MmapHandle::closed)
    .def("close", [](kvikio::MmapHandle& h) { without_gil([&] { h.close(); }); })
    .def(
      "pread",
      [](kvikio::MmapHandle& h,
         std::uintptr_t buf,
         std::size_t size,
         std::size_t offset,
         std::size_t task_size) {
        return Future{without_gil([&] { return h.pread(as_ptr(buf), size, offset, task_size); })};
      });
  m.def("memory_register", [](std::uintptr_t p) { kvikio::memory_register(as_ptr(p)); });
  m.def("memory_deregister", [](std::uintptr_t p) { kvikio::memory_deregister(as_ptr(p)); });
  m.def("stream_register",
        [](std::uintptr_t s, unsigned flags) { kvikio::stream_register(as_stream(s), flags); });
  m.def("stream_deregister", [](std::uintptr_t s) { kvikio::stream_deregister(as_stream(s)); });
  m.def("bounce_buffer_free",
        [] { return kvikio::CudaPinnedBounceBufferPool::instance().clear(); });
}

void bind_file_utils(py::module_& m)
{
  // A file is a path (str) or an open descriptor (int).
  m.def(
    "get_page_cache_info",
    [](std::string const& path, std::size_t offset, std::size_t length) {
      return without_gil([&] { return kvikio::get_page_cache_info(path, offset, length); });
    },
    py::arg("file"),
    py::arg("offset") = 0,
    py::arg("length") = 0);
  m.def(
    "get_page_cache_info",
    [](int fd, std::size_t offset, std::size_t length) {
      return without_gil([&] { return kvikio::get_page_cache_info(fd, offset, length); });
    },
    py::arg("file"),
    py::arg("offset") = 0,
    py::arg("length") = 0);
  m.def(
    "drop_file_page_cache",
    [](std::string const& path, std::size_t offset, std::size_t length, bool sync_first) {
      without_gil([&] { kvikio::drop_file_page_cache(path, offset, length, sync_first); });
    },
    py::arg("file"),
    py::arg("offset")     = 0,
    py::arg("length")     = 0,
    py::arg("sync_first") = true);
  m.def(
    "drop_file_page_cache",
    [](int fd, std::size_t offset, std::size_t length, bool sync_first) {
      without_gil([&] { kvikio::drop_file_page_cache(fd, offset, length, sync_first); });
    },
    py::arg("file"),
    py::arg("offset")     = 0,
    py::arg("length")     = 0,
    py::arg("sync_first") = true);
  m.def("drop_system_page_cache", [](bool reclaim_dentries_and_inodes, bool sync_first) {
    return without_gil(
      [&] { return kvikio::drop_system_page_cache(reclaim_dentries_and_inodes, sync_first); });
  });
}

void bind_cufile_driver(py::module_& m)
{
  auto c = m.def_submodule("cufile_driver", "the cuFile driver: open, close, its properties");
  c.def("is_cufile_usable", [] { return kvikio::detail::is_cufile_usable(); });
  c.def("is_gds_available", [] { return kvikio::detail::is_gds_available(); });
  c.def("libcufile_version", [] { return kvikio::cufile_version(); });
  c.def("is_cufile_library_available", [] { return kvikio::is_cufile_library_available(); });
  // Without cuFile there is no driver to open: a RuntimeError that says why.
  c.def("driver_open", [] {
    KVIKIO_EXPECT(kvikio::is_cufile_library_available(),
                  "cuFile is not available: " + kvikio::detail::cufile_unavailable_reason(),
                  std::runtime_error);
    kvikio::cuFileAPI::instance().driver_open();
  });
  c.def("driver_close", [] {
    KVIKIO_EXPECT(kvikio::is_cufile_library_available(),
                  "cuFile is not available: " + kvikio::detail::cufile_unavailable_reason(),
                  std::runtime_error);
    kvikio::cuFileAPI::instance().driver_close();
  });
  using P = kvikio::DriverProperties;
  py::class_<P>(c, "DriverProperties")
    .def(py::init<>())
    .def("is_gds_available", &P::is_gds_available)
    .def("get_nvfs_major_version", &P::get_nvfs_major_version)
    .def("get_nvfs_minor_version", &P::get_nvfs_minor_version)
    .def("get_nvfs_allow_compat_mode", &P::get_nvfs_allow_compat_mode)
    .def("get_nvfs_poll_mode", &P::get_nvfs_poll_mode)
    .def("set_nvfs_poll_mode", &P::set_nvfs_poll_mode)
    .def("get_nvfs_poll_thresh_size", &P::get_nvfs_poll_thresh_size)
    .def("set_nvfs_poll_thresh_size", &P::set_nvfs_poll_thresh_size)
    .def("get_max_device_cache_size", &P::get_max_device_cache_size)
    .def("set_max_device_cache_size", &P::set_max_device_cache_size)
    .def("get_per_buffer_cache_size", &P::get_per_buffer_cache_size)
    .def("get_max_pinned_memory_size", &P::get_max_pinned_memory_size)
    .def("set_max_pinned_memory_size", &P::set_max_pinned_memory_size);
}

void bind_ipc(py::module_& m)
{
  namespace ipc = kvikio::ipc;
  auto i        = m.def_submodule("ipc", "kvikio::ipc");
  py::class_<ipc::IpcHandle>(i, "IpcHandle")
    .def_static("from_bytes",
                [](py::bytes const& b) {
                  std::string_view const v = b;
                  return ipc::IpcHandle::from_bytes(v.data(), v.size());
                })
    .def("to_bytes",
         [](ipc::IpcHandle const& h) {
           auto const bytes = h.to_bytes();
           return py::bytes(reinterpret_cast<char const*>(bytes.data()), bytes.size());
         })
    .def_property_readonly("offset", [](ipc::IpcHandle const& h) { return h.offset; })
    .def_property_readonly("length", [](ipc::IpcHandle const& h) { return h.length; })
    .def_property_readonly("buffer_id", [](ipc::IpcHandle const& h) { return h.buffer_id; })
    .def_property_readonly("pid", [](ipc::IpcHandle const& h) { return h.producer.pid; });
  py::class_<ipc::MappedRegion>(i, "MappedRegion")
    .def_property_readonly(
      "ptr", [](ipc::MappedRegion const& r) { return reinterpret_cast<std::uintptr_t>(r.get()); })
    .def_property_readonly("nbytes", &ipc::MappedRegion::size)
    .def("release", &ipc::MappedRegion::reset);
  py::class_<ipc::CacheStats>(i, "CacheStats")
    .def_readonly("entries", &ipc::CacheStats::entries)
    .def_readonly("hits", &ipc::CacheStats::hits)
    .def_readonly("misses", &ipc::CacheStats::misses)
    .def_readonly("evictions", &ipc::CacheStats::evictions)
    .def_readonly("overflows", &ipc::CacheStats::overflows)
    .def_readonly("stale", &ipc::CacheStats::stale);
  i.def("export_memory",
        [](std::uintptr_t p, std::size_t n) { return ipc::export_memory(as_ptr(p), n); });
  i.def("open", [](ipc::IpcHandle const& h) { return without_gil([&] { return ipc::open(h); }); });
  i.def("forget", [](std::uintptr_t p) { ipc::forget(as_ptr(p)); });
  i.def("export_cache_stats", &ipc::export_cache_stats);
  i.def("open_cache_stats", &ipc::open_cache_stats);
  i.def("clear", [] { without_gil([] { ipc::clear(); }); });
}

}  // namespace

PYBIND11_MODULE(_lib, m)
{
  m.doc()               = "KvikIO's C++ library, for the kvikio package";
  m.attr("__version__") = std::to_string(KVIKIO_VERSION_MAJOR) + "." +
                          std::to_string(KVIKIO_VERSION_MINOR) + "." +
                          std::to_string(KVIKIO_VERSION_PATCH);
  py::class_<Future>(m, "Future")
    .def("get", &Future::get)
    .def("wait", &Future::wait)
    .def("done", &Future::done);
  py::class_<StreamOp>(m, "StreamFuture").def("check_bytes_done", &StreamOp::check_bytes_done);
  m.def("is_host_memory", [](std::uintptr_t p) { return kvikio::is_host_memory(as_ptr(p)); });
  m.def("is_cuda_available", [] { return kvikio::is_cuda_available(); });
  m.def("cuda_unavailable_reason", [] { return kvikio::detail::cuda_unavailable_reason(); });
  // Mapped device bytes from `ptr` on, up to `wanted`: over the ranges the driver reports one
  // after the other (memory mapped in chunks, such as PyTorch's expandable segments, is one
  // range per chunk). None where the driver cannot tell (memory it did not allocate as device
  // memory): what a __cuda_array_interface__ claims is checked.
  m.def("allocation_room",
        [](std::uintptr_t ptr, std::size_t wanted) -> std::optional<std::size_t> {
          std::size_t room = 0;
          try {
            while (room < wanted) {
              auto const [base, size, offset] =
                kvikio::get_alloc_info(reinterpret_cast<void*>(ptr + room));
              room += size - offset;
            }
          } catch (std::exception const&) {
            if (room == 0) { return std::nullopt; }
          }
          return room;
        });
  register_system_errors(m);
  bind_defaults(m);
  bind_file_handle(m);
  bind_remote(m);
  bind_mmap_and_buffers(m);
  bind_file_utils(m);
  bind_cufile_driver(m);
  bind_ipc(m);
  bind_statistics(m);
}
