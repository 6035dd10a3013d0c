/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvikio::test {

/// A fresh directory under the test temp dir (disk-backed in CI), removed with its files.
class TempDir {
 public:
  TempDir()
  {
    std::string tmpl = std::filesystem::temp_directory_path().string() + "/kvikio-test-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) { throw std::runtime_error("mkdtemp failed"); }
    path_ = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(TempDir const&)            = delete;
  TempDir& operator=(TempDir const&) = delete;
  [[nodiscard]] std::string file(std::string const& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// The file's bytes, read with plain POSIX calls (independent of KvikIO).
inline std::vector<std::uint8_t> read_file(std::string const& path)
{
  int const fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) { throw std::runtime_error("open " + path); }
  std::vector<std::uint8_t> out(static_cast<std::size_t>(::lseek(fd, 0, SEEK_END)));
  std::size_t done = 0;
  while (done < out.size()) {
    auto const n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n <= 0) { throw std::runtime_error("pread " + path); }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return out;
}

/// Writes `bytes` to a new file with plain POSIX calls.
inline void write_file(std::string const& path, std::vector<std::uint8_t> const& bytes)
{
  int const fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) { throw std::runtime_error("open " + path); }
  std::size_t done = 0;
  while (done < bytes.size()) {
    auto const n = ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n <= 0) { throw std::runtime_error("pwrite " + path); }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

}  // namespace kvikio::test
