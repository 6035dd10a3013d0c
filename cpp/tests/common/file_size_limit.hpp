/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <signal.h>
#include <sys/resource.h>

#include <cstddef>

namespace kvikio::test {

/// While it lives, this process may not make a file larger than `bytes` (RLIMIT_FSIZE): a write
/// past it fails with EFBIG, SIGXFSZ being ignored. `set()` says whether the limit took.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(std::size_t bytes)
  {
    if (::getrlimit(RLIMIT_FSIZE, &saved_) != 0) { return; }
    old_handler_     = ::signal(SIGXFSZ, SIG_IGN);
    rlimit limited   = saved_;
    limited.rlim_cur = static_cast<rlim_t>(bytes);
    set_             = ::setrlimit(RLIMIT_FSIZE, &limited) == 0;
  }
  ~FileSizeLimit()
  {
    if (old_handler_ == nullptr) { return; }
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    ::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(FileSizeLimit const&)            = delete;
  FileSizeLimit& operator=(FileSizeLimit const&) = delete;
  [[nodiscard]] bool set() const noexcept { return set_; }

 private:
  rlimit saved_{};
  sighandler_t old_handler_{nullptr};
  bool set_{false};
};

}  // namespace kvikio::test
