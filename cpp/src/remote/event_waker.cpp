/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "remote/reactor.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

namespace kvikio::detail {

namespace multi_poll {

EventWaker::EventWaker() : fd_{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)}
{
  if (fd_ < 0) {
    throw std::system_error(errno, std::generic_category(), "KvikIO: eventfd for a reactor");
  }
}

EventWaker::~EventWaker() { ::close(fd_); }

// Sequentially consistent: either the reactor sees `pending_` before it blocks, or this sees
// `sleeping_` and writes the eventfd that ends its wait.
void EventWaker::wake() noexcept
{
  pending_.store(true);
  if (sleeping_.exchange(false)) {
    std::uint64_t const one = 1;
    (void)!::write(fd_, &one, sizeof one);  // only fails if the count is about to overflow
  }
}

bool EventWaker::about_to_block() noexcept
{
  sleeping_.store(true);
  return pending_.exchange(false);
}

void EventWaker::awake(bool signalled) noexcept
{
  sleeping_.store(false);
  if (signalled) {
    std::uint64_t count = 0;
    (void)!::read(fd_, &count, sizeof count);
  }
}

}  // namespace multi_poll

}  // namespace kvikio::detail
