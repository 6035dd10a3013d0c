/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The URL forms of the remote endpoints: s3:// URLs split into bucket and object or are
 * rejected with std::invalid_argument, the validity checks never throw, the endpoint type of a
 * URL is inferred or the URL is rejected with std::runtime_error (upstream's type: "Bad scheme",
 * "Unsupported endpoint URL"), and a bucket and object
 * (split from the input at its first NUL) build an URL or are rejected the same way.
 */
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <kvikio/hdfs.hpp>
#include <kvikio/remote_handle.hpp>

namespace {

template <typename F>
void taken_or_invalid(F&& f)
{
  try {
    f();
  } catch (std::invalid_argument const&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size)
{
  std::string const text(reinterpret_cast<char const*>(data), size);
  (void)kvikio::S3Endpoint::is_url_valid(text);
  (void)kvikio::WebHdfsEndpoint::is_url_valid(text);
  taken_or_invalid([&] { (void)kvikio::S3Endpoint::parse_s3_url(text); });
  try {
    (void)kvikio::infer_remote_endpoint_type(text);
  } catch (std::runtime_error const&) {
  }
  auto const split = text.find('\0');
  if (split != std::string::npos) {
    taken_or_invalid([&] {
      (void)kvikio::S3Endpoint::url_from_bucket_and_object(
        text.substr(0, split), text.substr(split + 1), "us-east-1", "http://127.0.0.1:9000");
    });
  }
  return 0;
}
