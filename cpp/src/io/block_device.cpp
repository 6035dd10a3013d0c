/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/file_utils.hpp>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>

#include <kvikio/error.hpp>

namespace kvikio {

namespace {

// "nvme<digits>n<digits>": an NVMe namespace, whose controller its siblings share.
bool is_nvme_namespace(std::string const& name)
{
  auto digits = [&](std::size_t& i) {
    std::size_t const start = i;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) != 0) {
      ++i;
    }
    return i > start;
  };
  if (name.rfind("nvme", 0) != 0) { return false; }
  std::size_t i = 4;
  if (!digits(i) || i >= name.size() || name[i] != 'n') { return false; }
  ++i;
  return digits(i) && i == name.size();
}

}  // namespace

BlockDeviceInfo get_block_device_info(std::string const& file_path)
{
  static std::mutex mutex;
  static std::map<std::string, BlockDeviceInfo> cache;
  {
    std::lock_guard const lock{mutex};
    if (auto it = cache.find(file_path); it != cache.end()) { return it->second; }
  }
  struct stat st {};
  KVIKIO_SYSCALL_CHECK(::stat(file_path.c_str(), &st), "stat(\"" + file_path + "\") failed");
  std::string const sysfs =
    "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  KVIKIO_SYSCALL_CHECK(::access(sysfs.c_str(), F_OK),
                       "sysfs path \"" + sysfs + "\" for file \"" + file_path +
                         "\" does not exist. The file may reside on a virtual file system "
                         "(overlayfs, tmpfs) with no backing block device.");
  std::error_code ec;
  std::filesystem::path device = std::filesystem::canonical(sysfs, ec);
  KVIKIO_EXPECT(!ec, "cannot resolve " + sysfs + ": " + ec.message());
  // A partition's directory sits inside its disk's.
  if (std::filesystem::exists(device / "partition")) { device = device.parent_path(); }
  std::string name = device.filename().string();
  if (is_nvme_namespace(name)) {
    device = device.parent_path();
    name   = device.filename().string();
  }
  std::ifstream dev_file{device / "dev"};
  KVIKIO_EXPECT(dev_file.good(),
                "Block device file cannot be opened: " + (device / "dev").string());
  unsigned dev_major{};
  unsigned dev_minor{};
  char colon{};
  dev_file >> dev_major >> colon >> dev_minor;
  KVIKIO_EXPECT(!dev_file.fail() && colon == ':',
                "Parsing failed: " + (device / "dev").string() + " does not hold major:minor");
  BlockDeviceInfo info{makedev(dev_major, dev_minor), dev_major, dev_minor, std::move(name)};
  std::lock_guard const lock{mutex};
  cache.try_emplace(file_path, info);
  return info;
}

}  // namespace kvikio
