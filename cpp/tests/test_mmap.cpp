/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * MmapHandle: ranges, defaults, errors, host and device destinations.
 */
#include <sys/mman.h>

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/mmap.hpp>

#include "common/device.hpp"
#include "common/poison.hpp"
#include "common/temp_dir.hpp"

using kvikio::MmapHandle;
using kvikio::test::pattern;
using kvikio::test::TempDir;

namespace {

using kvikio::test::poison;

class Mmap : public ::testing::Test {
 protected:
  void SetUp() override
  {
    path_ = dir_.file("f");
    kvikio::test::write_file(path_, content_);
  }
  TempDir dir_;
  std::string path_;
  std::vector<std::uint8_t> content_ = pattern(100000, 11);
};

TEST_F(Mmap, WholeFileByDefault)
{
  MmapHandle m{path_};
  EXPECT_EQ(m.file_size(), content_.size());
  EXPECT_EQ(m.nbytes(), content_.size());
  EXPECT_EQ(m.initial_map_offset(), 0U);
  std::vector<std::uint8_t> buf(content_.size() + 2, poison);
  EXPECT_EQ(m.read(buf.data() + 1), content_.size());
  EXPECT_EQ(0, std::memcmp(buf.data() + 1, content_.data(), content_.size()));
  EXPECT_EQ(buf.front(), poison);
  EXPECT_EQ(buf.back(), poison);
}

TEST_F(Mmap, SubrangeAtUnalignedOffset)
{
  std::size_t const offset = 5003, size = 40000;
  MmapHandle m{path_, "r", size, offset};
  EXPECT_EQ(m.initial_map_size(), size);
  std::vector<std::uint8_t> buf(100, poison);
  EXPECT_EQ(m.read(buf.data(), 100, offset + 10), 100U);
  EXPECT_EQ(0, std::memcmp(buf.data(), content_.data() + offset + 10, 100));
  std::vector<std::uint8_t> all(size, poison);
  EXPECT_EQ(m.pread(all.data(), size, offset, 4096).get(), size);
  // Without a size a read runs to the end of the file, past this mapping: upstream's rule.
  EXPECT_THROW(m.pread(all.data(), std::nullopt, offset, 4096).get(), std::out_of_range);
  EXPECT_EQ(0, std::memcmp(all.data(), content_.data() + offset, size));
}

TEST_F(Mmap, OutOfRangeAndBadInput)
{
  std::vector<std::uint8_t> buf(200000, poison);
  EXPECT_THROW((MmapHandle{path_, "r", 200000}), std::out_of_range);
  EXPECT_THROW((MmapHandle{path_, "r", std::nullopt, 200000}), std::out_of_range);
  EXPECT_THROW((MmapHandle{path_, "w"}), std::invalid_argument);
  EXPECT_THROW((MmapHandle{dir_.file("missing")}), kvikio::GenericSystemError);
  MmapHandle m{path_, "r", 1000, 1000};
  EXPECT_THROW(m.read(buf.data(), 10, 999), std::out_of_range);   // before the mapping
  EXPECT_THROW(m.read(buf.data(), 11, 1990), std::out_of_range);  // past its end
  EXPECT_THROW(m.read(buf.data(), 1, 2001), std::out_of_range);
  EXPECT_EQ(m.read(buf.data(), 10, 1990), 10U);
  EXPECT_THROW(m.read(nullptr, 10, 1000), std::invalid_argument);
  for (std::size_t i = 10; i < buf.size(); ++i) {
    ASSERT_EQ(buf[i], poison) << i;
  }
  m.close();
  EXPECT_TRUE(m.closed());
  EXPECT_THROW(m.read(buf.data(), 1, 1000), std::runtime_error);
  EXPECT_EQ(m.nbytes(), 0U);
  EXPECT_EQ(m.file_size(), 0U);
}

// Only a file mapping for reading: MAP_ANONYMOUS would read zeros as the file's bytes,
// MAP_FIXED would map over what lives at the hint.
TEST_F(Mmap, MapFlagsAreAFileMappingsOnly)
{
  for (int const flags : {MAP_PRIVATE | MAP_ANONYMOUS,
                          MAP_PRIVATE | MAP_FIXED,
                          MAP_SHARED | MAP_PRIVATE,
                          0,
                          MAP_PRIVATE | MAP_GROWSDOWN}) {
    try {
      MmapHandle m{path_, "r", std::nullopt, 0, 0644, flags};
      ADD_FAILURE() << "map_flags " << flags << " were taken";
    } catch (kvikio::GenericSystemError const& e) {  // upstream's type for a flag mmap refuses
      EXPECT_NE(std::string{e.what()}.find(std::to_string(flags)), std::string::npos) << e.what();
      EXPECT_NE(std::string{e.what()}.find("Invalid argument"), std::string::npos) << e.what();
    }
  }
  for (int const flags : {MAP_SHARED, MAP_PRIVATE | MAP_POPULATE, MAP_SHARED | MAP_NORESERVE}) {
    MmapHandle m{path_, "r", std::nullopt, 0, 0644, flags};
    std::vector<std::uint8_t> buf(content_.size(), poison);
    EXPECT_EQ(m.read(buf.data()), content_.size()) << flags;
    EXPECT_EQ(0, std::memcmp(buf.data(), content_.data(), content_.size())) << flags;
  }
}

TEST_F(Mmap, EmptyFile)
{
  auto const empty = dir_.file("empty");
  kvikio::test::write_file(empty, {});
  MmapHandle m{empty};
  EXPECT_EQ(m.nbytes(), 0U);
  EXPECT_EQ(m.read(nullptr), 0U);
}

using kvikio::test::OnDevice;

TEST_F(OnDevice, MmapIntoDeviceMemory)
{
  TempDir dir;
  auto const path    = dir.file("f");
  auto const content = pattern(3 << 20, 12);
  kvikio::test::write_file(path, content);
  kvikio::defaults::set_bounce_buffer_size(1 << 20);  // several staging rounds
  MmapHandle m{path};
  kvikio::test::DeviceBuffer dev{content.size()};
  EXPECT_EQ(m.pread(dev.get(), std::nullopt, 0, 1 << 20).get(), content.size());
  std::vector<std::uint8_t> back(content.size(), poison);
  KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  EXPECT_EQ(back, content);
}

}  // namespace
