/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "remote/reactor.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <system_error>
#include <utility>

#include <curl/curl.h>

#include <kvikio/detail/curl.hpp>
#include <kvikio/detail/logger.hpp>

#include "remote/range_request.hpp"
#include "remote/sink.hpp"

// The reactor's side of libcurl's multi interface: the multi handle and its epoll set, the
// sockets and timer libcurl asks to be watched, their events, and replacing a failed handle.
namespace kvikio::detail {

using multi_poll::Clock;
using multi_poll::Transfer;

// A multi handle and an epoll set that watches the waker; libcurl's callbacks point here.
void MultiPollTransport::Reactor::open_multi()
{
  epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_ < 0) {
    throw std::system_error(errno, std::generic_category(), "KvikIO: epoll_create1 for a reactor");
  }
  epoll_event ev{};
  ev.events  = EPOLLIN;
  ev.data.fd = waker_->fd();
  if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, waker_->fd(), &ev) != 0) {
    int const error = errno;
    ::close(epoll_);
    throw std::system_error(error, std::generic_category(), "KvikIO: epoll_ctl for a reactor");
  }
  multi_ = curl_multi_init();
  if (multi_ == nullptr) {
    ::close(epoll_);
    throw std::runtime_error("KvikIO: curl_multi_init failed");
  }
  // Keep warm connections when concurrency dips (the default cache is 4x the handles added),
  // and multiplex over HTTP/2 when the server offers it.
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, 64L);
  curl_multi_setopt(multi_, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &Reactor::on_socket);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, static_cast<void*>(this));
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &Reactor::on_timer);
  curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, static_cast<void*>(this));
}

void MultiPollTransport::Reactor::close_multi() noexcept
{
  if (multi_ != nullptr) {
    curl_multi_cleanup(multi_);  // may still call on_socket: the epoll set is still open
    multi_ = nullptr;
  }
  if (epoll_ >= 0) {
    ::close(epoll_);
    epoll_ = -1;
  }
  watched_.clear();
  curl_deadline_.reset();
}

// A socket libcurl no longer wants stays in the epoll set until it reports an event (act()
// takes it out then): a connection goes back to libcurl's cache after each transfer and is
// usually wanted again by the next one, with the same events. Only a socket wanted without a
// break since it was last set up is trusted to be in the set still; any other is set up again
// (a socket libcurl closed left the set by itself, and its number may be another socket's now).
int MultiPollTransport::Reactor::on_socket(CURL*, curl_socket_t socket, int what, void* self, void*)
{
  auto& r = *static_cast<Reactor*>(self);
  if (socket < 0) { return 0; }
  auto const fd = static_cast<std::size_t>(socket);
  if (fd >= r.watched_.size()) { r.watched_.resize(fd + 1); }
  auto& w = r.watched_[fd];
  if (what == CURL_POLL_REMOVE) {
    w.wanted = false;
    return 0;
  }
  std::uint32_t const events =
    ((what & CURL_POLL_IN) != 0 ? EPOLLIN : 0U) | ((what & CURL_POLL_OUT) != 0 ? EPOLLOUT : 0U);
  if (w.wanted && w.in_set && w.events == events) { return 0; }
  epoll_event ev{};
  ev.events       = events;
  ev.data.fd      = socket;
  bool const done = (w.in_set && ::epoll_ctl(r.epoll_, EPOLL_CTL_MOD, socket, &ev) == 0) ||
                    ::epoll_ctl(r.epoll_, EPOLL_CTL_ADD, socket, &ev) == 0 ||
                    (errno == EEXIST && ::epoll_ctl(r.epoll_, EPOLL_CTL_MOD, socket, &ev) == 0);
  if (!done) {
    // libcurl waits for an event that cannot come: its transfer ends at its timeout.
    KVIKIO_LOG_ERROR("multi-poll reactor: epoll_ctl for socket ", socket, " failed: errno ", errno);
    w = {};
    return 0;
  }
  w = {events, true, true};
  return 0;
}

int MultiPollTransport::Reactor::on_timer(CURLM*, long timeout_ms, void* self)
{
  auto& r = *static_cast<Reactor*>(self);
  if (timeout_ms < 0) {
    r.curl_deadline_.reset();
  } else {
    r.curl_deadline_ = Clock::now() + std::chrono::milliseconds{timeout_ms};
  }
  return 0;
}

void MultiPollTransport::Reactor::act(curl_socket_t socket, int events)
{
  if (socket != CURL_SOCKET_TIMEOUT) {
    auto const fd = static_cast<std::size_t>(socket);
    // Beyond the table: an event of an epoll set that a rebuild replaced in this same wait.
    if (fd >= watched_.size()) { return; }
    if (!watched_[fd].wanted) {  // an idle connection of libcurl's cache (the server closed it)
      (void)::epoll_ctl(epoll_, EPOLL_CTL_DEL, socket, nullptr);
      watched_[fd] = {};
      return;
    }
  }
  int still_running    = 0;
  CURLMcode const code = curl_multi_socket_action(multi_, socket, events, &still_running);
  if (code != CURLM_OK) { rebuild(code); }
}

// A failing multi handle fails the transfers attached to it (each pread reports it) and is
// replaced, with its epoll set; the reactor and the other transfers go on.
void MultiPollTransport::Reactor::rebuild(CURLMcode code)
{
  KVIKIO_LOG_ERROR("multi-poll reactor: ", curl_multi_strerror(code), "; rebuilding its handle");
  auto const error = std::make_exception_ptr(
    std::runtime_error(std::string{"KvikIO: the multi-poll reactor's libcurl handle failed: "} +
                       curl_multi_strerror(code)));
  for (auto& t : active_) {
    if (t->state == Transfer::State::running) {
      curl_multi_remove_handle(multi_, t->curl->get());
      t->end(error);
    }
  }
  running_ = 0;
  close_multi();
  open_multi();
}

}  // namespace kvikio::detail
