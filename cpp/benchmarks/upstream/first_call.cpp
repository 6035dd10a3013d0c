/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * How long a process's first stream-ordered read keeps its caller: in a fresh process (one run
 * of this program), after a device allocation and two streams, the file is opened, `gap_ms`
 * pass (an application's own work between opening a file and its first read), and
 * FileHandle::read_async of `size` bytes is called on the first stream; then a second call on
 * that stream, and a first call on the other. Each is timed from the call to its return (the
 * caller's time, not the read's), the opening too. Only the public API, so the same source is
 * compiled against upstream KvikIO and against this project (ci/upstream-harness.sh); the bytes
 * are compared with the file read by pread(2).
 *
 * Usage: first_call <label> <file> <size> <gap_ms>
 * Prints: "<label> first_call <size> gap <gap> ms: open <us> us, first <us> us, second <us> us,
 * other stream's first <us> us".
 */
#include <kvikio/file_handle.hpp>
#include <kvikio/stream.hpp>

#include <cuda_runtime.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double micros_since(Clock::time_point start)
{
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// The device buffer's bytes against the file's first `size` bytes.
bool same_as_file(std::string const& path, char const* device, std::size_t size)
{
  std::vector<char> want(size), got(size);
  int const fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) { return false; }
  ssize_t const n = ::pread(fd, want.data(), size, 0);
  ::close(fd);
  return n == static_cast<ssize_t>(size) &&
         cudaMemcpy(got.data(), device, size, cudaMemcpyDeviceToHost) == cudaSuccess &&
         std::memcmp(want.data(), got.data(), size) == 0;
}

}  // namespace

int main(int argc, char** argv)
{
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s label file size gap_ms\n", argv[0]);
    return 2;
  }
  std::string const label = argv[1], path = argv[2];
  std::size_t const size = std::stoull(argv[3]);
  int const gap_ms       = std::atoi(argv[4]);
  char* device           = nullptr;
  cudaStream_t first{}, other{};
  if (cudaMalloc(reinterpret_cast<void**>(&device), size) != cudaSuccess ||
      cudaStreamCreateWithFlags(&first, cudaStreamNonBlocking) != cudaSuccess ||
      cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking) != cudaSuccess) {
    std::puts("allocation failed");
    return 1;
  }
  auto const opening = Clock::now();
  kvikio::FileHandle file(path, "r");
  double const open_us = micros_since(opening);
  if (file.nbytes() < size) {
    std::puts("file too small");
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
  double held_us[3];
  cudaStream_t const streams[3] = {first, first, other};
  for (int i = 0; i < 3; ++i) {
    cudaMemset(device, 0xEE, size);
    auto const call = Clock::now();
    auto future     = file.read_async(device, size, 0, 0, streams[i]);
    held_us[i]      = micros_since(call);
    if (future.check_bytes_done() != size || !same_as_file(path, device, size)) {
      std::puts("wrong bytes");
      return 1;
    }
  }
  std::printf(
    "%-10s first_call %zu gap %d ms: open %.0f us, first %.0f us, second %.0f us, other "
    "stream's first %.0f us\n",
    label.c_str(),
    size,
    gap_ms,
    open_us,
    held_us[0],
    held_us[1],
    held_us[2]);
  return 0;
}
