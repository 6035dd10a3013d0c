/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file hdfs.hpp
 * @brief Files of a Hadoop file system read over WebHDFS (`op=GETFILESTATUS` for the size,
 * `op=OPEN&offset=&length=` for the bytes, following the redirect to a data node).
 */

#include <optional>
#include <string>

#include <kvikio/remote_handle.hpp>

namespace kvikio {

/**
 * @brief A file of a Hadoop file system, read over WebHDFS. Requests carry no credentials other
 * than an optional `user.name` query parameter.
 */
class WebHdfsEndpoint : public RemoteEndpoint {
 public:
  /**
   * @param url `http(s)://host:port/webhdfs/v1/<path>`, optionally with `?user.name=<user>`.
   * @param username overrides the URL's user; default `KVIKIO_WEBHDFS_USERNAME` if set.
   * @throws std::invalid_argument for any other URL.
   */
  explicit WebHdfsEndpoint(std::string url, std::optional<std::string> username = std::nullopt);
  /**
   * @brief The endpoint of `http://<host>:<port>/webhdfs/v1/<path>`.
   * @param host the WebHDFS server's host name or address.
   * @param port the WebHDFS server's port.
   * @param path the file's path; a leading '/' is dropped and the rest is percent-encoded (slashes
   * kept).
   * @param username as for the URL constructor.
   * @throws std::invalid_argument if the resulting URL is not a WebHDFS URL (an empty path, say).
   */
  WebHdfsEndpoint(std::string host,
                  std::string port,
                  std::string path,
                  std::optional<std::string> username = std::nullopt);

  void setopt(CurlHandle& curl) override;
  void setup_range_request(CurlHandle& curl, std::size_t file_offset, std::size_t size) override;
  [[nodiscard]] std::string str() const override;
  std::size_t get_file_size() override;
  /// @brief Whether `url` is a WebHDFS URL of the form above. Never throws.
  static bool is_url_valid(std::string const& url) noexcept;

 private:
  std::string base_;  // scheme://host:port/webhdfs/v1/path
  std::optional<std::string> username_;
  [[nodiscard]] std::string with_op(std::string const& query) const;
};

namespace detail {
/// @brief The "length" of a GETFILESTATUS answer. @throws std::runtime_error quoting the text.
std::size_t parse_webhdfs_length(std::string const& json);
}  // namespace detail

}  // namespace kvikio
