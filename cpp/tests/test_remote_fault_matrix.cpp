/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The fault matrix of the remote entry points: RemoteHandle pread/read (host and device) and
 * read_async, on each transport (".multi_poll" in ctest), against the misbehaving HTTP server
 * (servers/misbehaving_http.py: a server ignoring ranges, resets, short bodies, stalls, wrong
 * Content-Range, 404, 403), and with a driver failure at each step of the device reads; with the
 * checks of common/fault_matrix.hpp around every case. (Retries of transient errors:
 * test_remote_faults.)
 */
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/defaults.hpp>
#include <kvikio/remote_handle.hpp>

#include "common/fault_matrix.hpp"
#include "common/test_servers.hpp"

using kvikio::test::EntryPoint;

namespace {

class RemoteFaultMatrix : public kvikio::test::FaultMatrixBase {
 protected:
  /// The remote entry points, on remote_ (which open() points at a behaviour of the server).
  std::vector<EntryPoint> remote_entry_points()
  {
    std::vector<EntryPoint> out;
    for (bool const device : {false, true}) {
      out.push_back({"RemoteHandle::pread", device, false, [this](void* m, auto n, auto off) {
                       return remote_->pread(m, n, off).get();
                     }});
      out.push_back({"RemoteHandle::read", device, false, [this](void* m, auto n, auto off) {
                       return remote_->read(m, n, off);
                     }});
    }
    out.push_back({"RemoteHandle::read_async", true, false, [this](void* m, auto n, auto off) {
                     return remote_->read_async(m, n, off, stream_).check_bytes_done();
                   }});
    return out;
  }
  /// remote_ now reads `/behaviour/object` of the misbehaving server.
  void open(std::string const& behaviour)
  {
    remote_ = std::make_unique<kvikio::RemoteHandle>(kvikio::RemoteHandle::open(
      url(behaviour), kvikio::RemoteEndpointType::HTTP, std::nullopt, object_size));
  }
  [[nodiscard]] std::string url(std::string const& behaviour) const
  {
    return server_.url("/" + behaviour + "/object");
  }
  void SetUp() override
  {
    FaultMatrixBase::SetUp();
    if (IsSkipped()) { return; }
    for (std::size_t i = 0; i < content_.size(); ++i) {  // what the server serves
      content_[i] = kvikio::test::MisbehavingServer::byte(i);
    }
    kvikio::defaults::set_http_max_attempts(1);  // retries: test_remote_faults
    kvikio::defaults::set_http_timeout(1);
  }
  static constexpr std::size_t object_size = file_size_;
  kvikio::test::MisbehavingServer server_{object_size};
  std::unique_ptr<kvikio::RemoteHandle> remote_;
};

TEST_F(RemoteFaultMatrix, EveryHttpFault)
{
  ASSERT_EQ(object_size, content_.size());
  for (auto const& e : remote_entry_points()) {
    open("ok");
    warm_up(e);
    for (std::string const fault :
         {"ignore-range", "reset", "short", "stall", "wrong-range", "404", "403"}) {
      std::string const what = kvikio::test::describe(e) + ", /" + fault + "/";
      open(fault);
      auto const out = run_case(e, size_, offset_, what);
      EXPECT_FALSE(out.bytes.has_value()) << what << ": succeeded";
      EXPECT_NE(out.error.find(url(fault)), std::string::npos)
        << what << ": the error does not name the URL: " << out.error;
      open("ok");
      expect_recovery(e, what);
    }
  }
}

TEST_F(RemoteFaultMatrix, DriverFailureAtEachStep)
{
  if (!kvikio::test::on_simulator()) {
    GTEST_SKIP() << "failing driver calls at run time needs the simulator";
  }
  open("ok");
  every_driver_failure(remote_entry_points());
}

}  // namespace
