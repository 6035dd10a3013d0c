/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The handle blobs (IpcHandle, IpcEventHandle) and the identity of this process.
 */
#include <kvikio/ipc.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <kvikio/error.hpp>

#include "ipc/ipc_internals.hpp"

namespace kvikio::ipc {
namespace {

static_assert(std::is_trivially_copyable_v<IpcHandle> && sizeof(IpcHandle) == IpcHandle::nbytes);
static_assert(std::is_trivially_copyable_v<IpcEventHandle> &&
              sizeof(IpcEventHandle) == IpcEventHandle::nbytes);

// "8-4-4-4-12" hexadecimal digits into 16 bytes.
std::array<std::uint8_t, 16> read_boot_id()
{
  std::ifstream in{"/proc/sys/kernel/random/boot_id"};
  std::string text;
  std::getline(in, text);
  std::string hex;
  for (char c : text) {
    if (std::isxdigit(static_cast<unsigned char>(c)) != 0) { hex += c; }
  }
  KVIKIO_EXPECT(hex.size() == 32,
                "kvikio::ipc: cannot read this process's identity (/proc/sys/kernel/random/boot_id "
                "reads \"" +
                  text + "\")",
                std::runtime_error);
  std::array<std::uint8_t, 16> id{};
  for (std::size_t i = 0; i < id.size(); ++i) {
    id[i] = static_cast<std::uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  }
  return id;
}

// Field 22 of /proc/self/stat (after the parenthesised command, which may hold spaces).
std::uint64_t read_start_time()
{
  std::ifstream in{"/proc/self/stat"};
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto const close = stat.rfind(')');
  std::istringstream fields{close == std::string::npos ? std::string{} : stat.substr(close + 1)};
  std::string field;
  int n = 2;
  while (n < 22 && fields >> field) {
    ++n;
  }
  KVIKIO_EXPECT(
    n == 22 && !field.empty() && field.find_first_not_of("0123456789") == std::string::npos,
    "kvikio::ipc: cannot read this process's start time from /proc/self/stat",
    std::runtime_error);
  return std::stoull(field);
}

template <typename Handle>
std::uint64_t checksum_of(Handle const& h) noexcept
{
  return detail::fnv1a(&h, offsetof(Handle, checksum));
}

template <typename Handle>
std::array<std::byte, Handle::nbytes> bytes_of(Handle const& h) noexcept
{
  std::array<std::byte, Handle::nbytes> out{};
  std::memcpy(out.data(), &h, out.size());
  return out;
}

template <typename Handle>
Handle parse(void const* data, std::size_t size, char const* what)
{
  KVIKIO_EXPECT(data != nullptr, std::string{what} + ": null data", std::invalid_argument);
  KVIKIO_EXPECT(size == Handle::nbytes,
                std::string{what} + ": a blob of " + std::to_string(size) + " bytes, expected " +
                  std::to_string(Handle::nbytes),
                std::invalid_argument);
  Handle h;
  std::memcpy(&h, data, sizeof(h));
  detail::check_handle(h, what);
  return h;
}

}  // namespace

ProducerId const& ProducerId::self()
{
  // Once per process; again in a child after fork() (another producer: its pid differs).
  static std::mutex mutex;
  static ProducerId id{};
  std::lock_guard const lock{mutex};
  if (id.pid != ::getpid()) {
    ProducerId fresh;
    fresh.boot_id = read_boot_id();
    struct stat st {};
    KVIKIO_EXPECT(::stat("/proc/self/ns/pid", &st) == 0,
                  "kvikio::ipc: cannot read this process's pid namespace (/proc/self/ns/pid)",
                  std::runtime_error);
    fresh.pid_namespace = st.st_ino;
    fresh.start_time    = read_start_time();
    fresh.pid           = ::getpid();
    id                  = fresh;
  }
  return id;
}

std::array<std::byte, IpcHandle::nbytes> IpcHandle::to_bytes() const noexcept
{
  return bytes_of(*this);
}

IpcHandle IpcHandle::from_bytes(void const* data, std::size_t size)
{
  return parse<IpcHandle>(data, size, "IpcHandle::from_bytes");
}

std::array<std::byte, IpcEventHandle::nbytes> IpcEventHandle::to_bytes() const noexcept
{
  return bytes_of(*this);
}

IpcEventHandle IpcEventHandle::from_bytes(void const* data, std::size_t size)
{
  return parse<IpcEventHandle>(data, size, "IpcEventHandle::from_bytes");
}

namespace detail {

std::uint64_t fnv1a(void const* data, std::size_t size) noexcept
{
  std::uint64_t hash = 14695981039346656037ULL;
  auto const* bytes  = static_cast<unsigned char const*>(data);
  for (std::size_t i = 0; i < size; ++i) {
    hash = (hash ^ bytes[i]) * 1099511628211ULL;
  }
  return hash;
}

void seal(IpcHandle& h) noexcept
{
  h.magic    = IpcHandle::magic_value;
  h.version  = IpcHandle::current_version;
  h.checksum = checksum_of(h);
}

void seal(IpcEventHandle& h) noexcept
{
  h.magic    = IpcEventHandle::magic_value;
  h.version  = IpcEventHandle::current_version;
  h.checksum = checksum_of(h);
}

template <typename Handle>
void check_common(Handle const& h, std::string const& what)
{
  KVIKIO_EXPECT(h.magic == Handle::magic_value,
                what + ": not a KvikIO handle of this kind (magic " + std::to_string(h.magic) +
                  ", expected " + std::to_string(Handle::magic_value) + ")",
                std::invalid_argument);
  KVIKIO_EXPECT(h.version == Handle::current_version,
                what + ": handle version " + std::to_string(h.version) + ", this library reads " +
                  std::to_string(Handle::current_version),
                std::invalid_argument);
  KVIKIO_EXPECT(h.checksum == checksum_of(h),
                what + ": checksum mismatch (the blob was altered or truncated on its way)",
                std::invalid_argument);
}

void check_handle(IpcHandle const& h, std::string const& what)
{
  check_common(h, what);
  KVIKIO_EXPECT(h.offset <= h.alloc_size && h.length <= h.alloc_size - h.offset,
                what + ": " + std::to_string(h.length) + " bytes at offset " +
                  std::to_string(h.offset) + " leave an allocation of " +
                  std::to_string(h.alloc_size) + " bytes",
                std::invalid_argument);
}

void check_handle(IpcEventHandle const& h, std::string const& what) { check_common(h, what); }

}  // namespace detail
}  // namespace kvikio::ipc
