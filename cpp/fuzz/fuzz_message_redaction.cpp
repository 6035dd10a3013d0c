/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Error bodies and header lines from servers on their way into messages: redact() and
 * error_body_for_message() take any bytes without crashing; no AWS access key id survives
 * redact(); a value planted after "X-Amz-Signature=" or "x-amz-security-token: " never survives
 * either; and error_body_for_message() gives at most one line of bounded length without
 * control bytes.
 */
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "remote/message_redaction.hpp"

namespace {

bool holds_access_key_id(std::string_view text)
{
  for (std::size_t at = 0; at + 20 <= text.size(); ++at) {
    auto const prefix = text.substr(at, 4);
    if (prefix != "AKIA" && prefix != "ASIA") { continue; }
    bool key = at == 0 || std::isalnum(static_cast<unsigned char>(text[at - 1])) == 0;
    for (std::size_t i = at + 4; key && i < at + 20; ++i) {
      key = (text[i] >= 'A' && text[i] <= 'Z') || (text[i] >= '0' && text[i] <= '9');
    }
    key = key &&
          (at + 20 == text.size() || std::isalnum(static_cast<unsigned char>(text[at + 20])) == 0);
    if (key) { return true; }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size)
{
  std::string_view const input{reinterpret_cast<char const*>(data), size};
  std::string const shown = kvikio::detail::redact(input);
  if (holds_access_key_id(shown)) { std::abort(); }
  constexpr std::string_view planted = "PLANTEDSECRET42";
  if (input.find(planted) != std::string_view::npos) { return 0; }  // the property needs it new
  for (std::string_view const name : {"X-Amz-Signature=", "\nx-amz-security-token: "}) {
    std::string text{input};
    text.append(name).append(planted);
    if (kvikio::detail::redact(text).find(planted) != std::string::npos) { std::abort(); }
  }
  std::string const body = kvikio::detail::error_body_for_message(input);
  if (body.size() > 1200) { std::abort(); }  // 300 bytes kept, each at most tripled
  for (char const c : body) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) { std::abort(); }
  }
  return 0;
}
