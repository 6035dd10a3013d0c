/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The read matrix of remote I/O: every endpoint type against its real peer (nginx, moto, the
 * botocore-checked S3 server with header and presigned signatures, WebHDFS), into host and device
 * memory, over sizes 0 / 1 / small / several tasks, offsets and thread counts. Destinations are
 * poisoned around the read and the surroundings checked.
 */
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/defaults.hpp>
#include <kvikio/hdfs.hpp>
#include <kvikio/remote_handle.hpp>

#include "common/device.hpp"
#include "common/env_guard.hpp"
#include "common/nginx.hpp"
#include "common/poison.hpp"
#include "common/temp_dir.hpp"
#include "common/test_servers.hpp"

using kvikio::RemoteEndpointType;
using kvikio::RemoteHandle;
using kvikio::test::pattern;

namespace {

using kvikio::test::poison;
constexpr std::size_t task_size  = 256 << 10;
constexpr std::size_t guard      = 64;
constexpr std::size_t size_total = (1 << 20) + 4099;

enum class Peer { Nginx, Moto, S3Signed, S3Presigned, S3Public, WebHdfs };
enum class Memory { Host, Device };

std::string name(Peer peer)
{
  switch (peer) {
    case Peer::Nginx: return "Nginx";
    case Peer::Moto: return "MotoS3";
    case Peer::S3Signed: return "S3SignedBotocoreChecked";
    case Peer::S3Presigned: return "S3PresignedByBotocore";
    case Peer::S3Public: return "S3Public";
    case Peer::WebHdfs: return "WebHdfs";
  }
  return "?";
}

// Readable test names in ctest (gtest prints parameters with these).
void PrintTo(Peer peer, std::ostream* os) { *os << name(peer); }
void PrintTo(Memory memory, std::ostream* os)
{
  *os << (memory == Memory::Host ? "Host" : "Device");
}

/// A peer serving `content` and a handle opened on it, the way a user of that peer would open it.
struct Served {
  std::unique_ptr<kvikio::test::Nginx> nginx;
  std::unique_ptr<kvikio::test::MotoS3Server> moto;
  std::unique_ptr<kvikio::test::PythonServer> python;
  kvikio::test::TempDir dir;
  std::optional<RemoteHandle> handle;
  RemoteEndpointType expected_type{};

  Served(Peer peer, std::vector<std::uint8_t> const& content)
  {
    using Sig = kvikio::test::S3SigV4Server;
    // A key that needs percent-encoding, and its encoding written out independently.
    std::string const as      = "dir/a b+c.bin";
    std::string const encoded = "dir/a%20b%2Bc.bin";
    switch (peer) {
      case Peer::Nginx:
        nginx = std::make_unique<kvikio::test::Nginx>();
        kvikio::test::write_file(nginx->root() + "/object.bin", content);
        handle.emplace(RemoteHandle::open(nginx->url("object.bin")));
        expected_type = RemoteEndpointType::HTTP;
        break;
      case Peer::Moto: {
        moto = std::make_unique<kvikio::test::MotoS3Server>();
        moto->put(encoded, content);
        kvikio::test::EnvGuard const env{
          {"AWS_DEFAULT_REGION", kvikio::test::MotoS3Server::region},
          {"AWS_ACCESS_KEY_ID", kvikio::test::MotoS3Server::access_key},
          {"AWS_SECRET_ACCESS_KEY", kvikio::test::MotoS3Server::secret},
          {"AWS_ENDPOINT_URL", moto->endpoint()},
          {"AWS_SESSION_TOKEN", std::nullopt}};
        handle.emplace(
          RemoteHandle::open(std::string{"s3://"} + kvikio::test::MotoS3Server::bucket + "/" + as));
        expected_type = RemoteEndpointType::S3;
        break;
      }
      case Peer::S3Signed:
      case Peer::S3Presigned:
      case Peer::S3Public: {
        std::string const bucket = peer == Peer::S3Public ? "public" : "bucket";
        std::filesystem::create_directories(dir.file(bucket + "/dir"));
        kvikio::test::write_file(dir.file(bucket + "/" + as), content);
        python                = std::make_unique<Sig>(dir.file(""));
        std::string const url = python->url(bucket + "/" + encoded);
        if (peer == Peer::S3Signed) {
          handle.emplace(
            std::make_unique<kvikio::S3Endpoint>(url, Sig::region, Sig::access_key, Sig::secret));
          expected_type = RemoteEndpointType::S3;
        } else if (peer == Peer::S3Presigned) {
          handle.emplace(RemoteHandle::open(Sig::presign(url)));
          expected_type = RemoteEndpointType::S3_PRESIGNED_URL;
        } else {
          handle.emplace(RemoteHandle::open(url, RemoteEndpointType::S3_PUBLIC));
          expected_type = RemoteEndpointType::S3_PUBLIC;
        }
        break;
      }
      case Peer::WebHdfs:
        kvikio::test::write_file(dir.file("data.bin"), content);
        python = std::make_unique<kvikio::test::WebHdfsServer>(dir.file(""));
        handle.emplace(RemoteHandle::open(python->url("webhdfs/v1/data.bin")));
        expected_type = RemoteEndpointType::WEBHDFS;
        break;
    }
  }
};

/// Host or device memory for `size` bytes between two guards. read() poisons all of it, reads
/// `size` bytes at `offset` into the middle and returns guard + bytes + guard as they are after.
class Destination {
 public:
  Destination(Memory memory, std::size_t size) : memory_{memory}, size_{size}
  {
    if (memory_ == Memory::Device) {
      device_ = std::make_unique<kvikio::test::DeviceBuffer>(size + 2 * guard);
    } else {
      host_.resize(size + 2 * guard);
    }
  }
  std::vector<std::uint8_t> read(RemoteHandle& handle, std::size_t offset)
  {
    std::vector<std::uint8_t> seen(size_ + 2 * guard, poison);
    if (memory_ == Memory::Host) {
      host_ = seen;
      EXPECT_EQ(handle.pread(host_.data() + guard, size_, offset, task_size).get(), size_);
      return host_;
    }
    auto& api = kvikio::test::api();
    KVIKIO_CUDA_DRIVER_TRY(api.MemcpyHtoD(device_->ptr, seen.data(), seen.size()));
    KVIKIO_CUDA_DRIVER_TRY(api.CtxSynchronize());
    EXPECT_EQ(
      handle.pread(static_cast<char*>(device_->get()) + guard, size_, offset, task_size).get(),
      size_);
    KVIKIO_CUDA_DRIVER_TRY(api.MemcpyDtoH(seen.data(), device_->ptr, seen.size()));
    return seen;
  }

 private:
  Memory memory_;
  std::size_t size_;
  std::vector<std::uint8_t> host_;
  std::unique_ptr<kvikio::test::DeviceBuffer> device_;
};

class RemoteReads : public kvikio::test::OnDevice,
                    public ::testing::WithParamInterface<std::tuple<Peer, Memory>> {
 protected:
  void SetUp() override
  {
    if (std::get<1>(GetParam()) == Memory::Device) { OnDevice::SetUp(); }
  }
};

TEST_P(RemoteReads, SizesOffsetsAndThreads)
{
  auto const [peer, memory] = GetParam();
  auto const content        = pattern(size_total, 60 + static_cast<std::uint32_t>(peer));
  Served served{peer, content};
  RemoteHandle& handle = *served.handle;
  EXPECT_EQ(handle.remote_endpoint_type(), served.expected_type);
  ASSERT_EQ(handle.nbytes(), content.size());
  auto const check = [&](Destination& destination, std::size_t size, std::size_t offset) {
    auto const seen = destination.read(handle, offset);
    SCOPED_TRACE(std::to_string(size) + " bytes at " + std::to_string(offset) + ", " +
                 std::to_string(kvikio::defaults::thread_pool_nthreads()) + " threads");
    ASSERT_EQ(0, std::memcmp(seen.data() + guard, content.data() + offset, size));
    for (std::size_t i = 0; i < guard; ++i) {
      ASSERT_EQ(seen[i], poison) << "written before the destination";
      ASSERT_EQ(seen[guard + size + i], poison) << "written after the destination";
    }
  };
  // Several ring slots per task on the device path.
  kvikio::defaults::set_bounce_buffer_size(64 << 10);
  for (unsigned threads : {1U, 3U, 8U}) {
    kvikio::defaults::set_thread_pool_nthreads(threads);
    for (std::size_t size :
         {std::size_t{0}, std::size_t{1}, std::size_t{4097}, 3 * task_size + 17}) {
      Destination destination{memory, size};
      for (std::size_t offset : {std::size_t{0}, std::size_t{13}, task_size - 1}) {
        check(destination, size, offset);
      }
    }
  }
  Destination last_byte{memory, 1};
  check(last_byte, 1, content.size() - 1);
  Destination all{memory, content.size()};
  check(all, content.size(), 0);
}

INSTANTIATE_TEST_SUITE_P(AllPeers,
                         RemoteReads,
                         ::testing::Combine(::testing::Values(Peer::Nginx,
                                                              Peer::Moto,
                                                              Peer::S3Signed,
                                                              Peer::S3Presigned,
                                                              Peer::S3Public,
                                                              Peer::WebHdfs),
                                            ::testing::Values(Memory::Host, Memory::Device)),
                         [](auto const& info) {
                           return name(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) == Memory::Host ? "_Host" : "_Device");
                         });

// RemoteHandle::read_async against every peer (the whole suite runs once per transport): three
// reads back to back on one stream land after the fill the stream did first and before the copy
// it does last; the device memory around them keeps its fill.
class RemoteReadAsync : public kvikio::test::OnDevice,
                        public ::testing::WithParamInterface<Peer> {};

TEST_P(RemoteReadAsync, OrderedOnTheStream)
{
  auto const content = pattern(size_total, 90 + static_cast<std::uint32_t>(GetParam()));
  Served served{GetParam(), content};
  RemoteHandle& handle = *served.handle;
  kvikio::defaults::set_thread_pool_nthreads(3);
  kvikio::defaults::set_task_size(task_size);
  kvikio::defaults::set_bounce_buffer_size(task_size);  // 3 threads: four 192 KiB slots
  struct Read {
    std::size_t size, file_offset, dev_offset;
  };
  std::vector<Read> const reads{{size_total - 13, 13, guard},
                                {4097, 1, guard + size_total},
                                {1, size_total - 1, guard + size_total + 4097}};
  std::size_t const span = guard + size_total + 4098 + guard;
  kvikio::test::DeviceBuffer dev{span};
  kvikio::test::PinnedBuffer fill{span};
  kvikio::test::PinnedBuffer out{span};
  std::memset(fill.ptr, poison, span);
  std::memset(out.ptr, 0, span);
  kvikio::test::Stream stream;
  KVIKIO_CUDA_DRIVER_TRY(
    kvikio::test::api().MemcpyHtoDAsync(dev.ptr, fill.ptr, span, stream.handle));
  std::vector<kvikio::StreamFuture> futures;
  for (auto const& r : reads) {
    futures.push_back(handle.read_async(
      static_cast<std::byte*>(dev.get()) + r.dev_offset, r.size, r.file_offset, stream.handle));
  }
  KVIKIO_CUDA_DRIVER_TRY(
    kvikio::test::api().MemcpyDtoHAsync(out.ptr, dev.ptr, span, stream.handle));
  for (std::size_t i = 0; i < reads.size(); ++i) {
    EXPECT_EQ(futures[i].check_bytes_done(), reads[i].size) << "read " << i;
  }
  std::vector<std::uint8_t> expected(out.bytes(), out.bytes() + span);
  std::memset(expected.data(), poison, span);
  for (auto const& r : reads) {
    std::memcpy(expected.data() + r.dev_offset, content.data() + r.file_offset, r.size);
  }
  EXPECT_EQ(0, std::memcmp(out.bytes(), expected.data(), span))
    << "the reads did not land between the fill and the copy out, or wrote outside their range";
}

TEST_P(RemoteReadAsync, BadArgumentsAreRefusedAtTheCall)
{
  Served served{GetParam(), pattern(4096, 99)};
  kvikio::test::DeviceBuffer dev{8192};
  kvikio::test::Stream stream;
  EXPECT_THROW((void)served.handle->read_async(dev.get(), 4097, 0, stream.handle),
               std::invalid_argument);
  std::vector<std::uint8_t> host(16);
  EXPECT_THROW((void)served.handle->read_async(host.data(), 16, 0, stream.handle),
               std::invalid_argument);
  EXPECT_EQ(served.handle->read_async(dev.get(), 0, 4096, stream.handle).check_bytes_done(), 0U);
}

INSTANTIATE_TEST_SUITE_P(AllPeers,
                         RemoteReadAsync,
                         ::testing::Values(Peer::Nginx,
                                           Peer::Moto,
                                           Peer::S3Signed,
                                           Peer::S3Presigned,
                                           Peer::S3Public,
                                           Peer::WebHdfs),
                         [](auto const& info) { return name(info.param); });

}  // namespace
