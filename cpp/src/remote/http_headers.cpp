/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "remote/http_headers.hpp"

#include "remote/message_redaction.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>
#include <string>

#include <curl/curl.h>

namespace kvikio::detail {
namespace {

bool is_space(char c) noexcept { return std::isspace(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::optional<std::string_view> header_value(std::string_view line, std::string_view name) noexcept
{
  if (line.size() <= name.size() || line[name.size()] != ':') { return std::nullopt; }
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) { return std::nullopt; }
  }
  line.remove_prefix(name.size() + 1);
  while (!line.empty() && is_space(line.front())) {
    line.remove_prefix(1);
  }
  while (!line.empty() && is_space(line.back())) {
    line.remove_suffix(1);
  }
  return line;
}

std::optional<std::size_t> decimal_length(std::string_view text) noexcept
{
  std::size_t value{};
  auto const [end, ec]   = std::from_chars(text.data(), text.data() + text.size(), value);
  bool const digits_only = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return c >= '0' && c <= '9';
  });
  if (!digits_only || ec != std::errc{} || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

std::size_t content_range_length(std::string_view value)
{
  auto const slash = value.rfind('/');
  std::string_view const total =
    slash == std::string_view::npos ? std::string_view{} : value.substr(slash + 1);
  auto const length = decimal_length(total);
  if (!length) {
    throw std::runtime_error("an unusable Content-Range \"" + server_text_for_message(value) +
                             "\" (expected \"bytes <first>-<last>/<length>\")");
  }
  return *length;
}

std::string response_entity_tag(void* curl_easy_handle) noexcept
{
  curl_header* header = nullptr;
  // Request -1: the latest response of the transfer, so a redirect's own tag is not taken.
  if (curl_easy_header(
        static_cast<CURL*>(curl_easy_handle), "ETag", 0, CURLH_HEADER, -1, &header) != CURLHE_OK ||
      header == nullptr || header->value == nullptr) {
    return {};
  }
  try {
    return std::string{header->value};
  } catch (...) {
    return {};
  }
}

bool same_entity_tag(std::string_view a, std::string_view b) noexcept
{
  auto const strong = [](std::string_view tag) {
    return tag.substr(0, 2) == "W/" ? tag.substr(2) : tag;
  };
  return strong(a) == strong(b);
}

}  // namespace kvikio::detail
