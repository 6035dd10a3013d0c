/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * A WebHDFS GETFILESTATUS answer from the server: any text gives a length or a
 * std::runtime_error, nothing else; and a well-formed answer with the number the first eight
 * bytes make gives exactly that number back.
 */
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include <kvikio/hdfs.hpp>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size)
{
  std::string const text(reinterpret_cast<char const*>(data), size);
  try {
    (void)kvikio::detail::parse_webhdfs_length(text);
  } catch (std::runtime_error const&) {
  }
  if (size >= sizeof(std::uint64_t)) {
    std::uint64_t n = 0;
    std::memcpy(&n, data, sizeof(n));
    std::string const answer =
      R"({"FileStatus":{"accessTime":0,"length" :  )" + std::to_string(n) + R"(,"type":"FILE"}})";
    if (kvikio::detail::parse_webhdfs_length(answer) != n) { std::abort(); }
  }
  return 0;
}
