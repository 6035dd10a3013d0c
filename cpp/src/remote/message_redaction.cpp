/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "remote/message_redaction.hpp"

#include <array>
#include <cctype>
#include <string>

namespace kvikio::detail {
namespace {

constexpr std::string_view hidden = "<hidden>";

char lower(char c) noexcept
{
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

// Names whose value is a secret, matched case-insensitively anywhere in a name: a parameter
// ("X-Amz-Signature="), a header ("x-amz-security-token: "), a JSON member or an XML element.
constexpr std::array<std::string_view, 10> secret_names{"signature",
                                                        "credential",
                                                        "token",
                                                        "accesskey",
                                                        "authorization",
                                                        "password",
                                                        "secret",
                                                        "canonicalrequest",
                                                        "stringtosign",
                                                        "signingkey"};

bool is_name_char(char c) noexcept
{
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
}

bool names_a_secret(std::string_view name) noexcept
{
  std::string folded;
  for (char const c : name) {
    if (c != '-' && c != '_' && c != '.') { folded += lower(c); }
  }
  for (auto const secret : secret_names) {
    if (folded.find(secret) != std::string::npos) { return true; }
  }
  return false;
}

// An AWS access key id: four capitals of a known kind (AKIA, ASIA, ...) and 16 more.
bool is_access_key_id(std::string_view text, std::size_t at) noexcept
{
  if (text.size() - at < 20 || (at > 0 && std::isalnum(static_cast<unsigned char>(text[at - 1])))) {
    return false;
  }
  auto const prefix = text.substr(at, 4);
  if (prefix != "AKIA" && prefix != "ASIA" && prefix != "AIDA" && prefix != "AROA") {
    return false;
  }
  for (std::size_t i = at + 4; i < at + 20; ++i) {
    char const c = text[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) { return false; }
  }
  return text.size() - at == 20 || std::isalnum(static_cast<unsigned char>(text[at + 20])) == 0;
}

bool ends_value(char c, bool header) noexcept
{
  if (c == '\r' || c == '\n' || c == '<' || c == '"' || c == '\'') { return true; }
  return !header && (c == '&' || c == ' ' || c == '\t' || c == ',' || c == ';' || c == ')' ||
                     c == '}' || c == ']');
}

}  // namespace

std::string redact(std::string_view text)
{
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    char const c = text[i];
    // The query of a URL or of a request's path ("GET /key?X-Amz-Signature=..."), to its end.
    if (c == '?') {
      std::size_t token = i;
      while (token > 0 && !ends_value(text[token - 1], false) && text[token - 1] != '>') {
        --token;
      }
      std::string_view const before = text.substr(token, i - token);
      if (before.find("://") != std::string_view::npos || before.substr(0, 1) == "/") {
        out += '?';
        out += hidden;
        while (i < text.size() && !ends_value(text[i], false)) {
          ++i;
        }
        continue;
      }
    }
    if (!is_name_char(c) || (i > 0 && is_name_char(text[i - 1]))) {
      out += c;
      ++i;
      continue;
    }
    // A name: what follows it decides whether it has a value to hide.
    std::size_t const start = i;
    while (i < text.size() && is_name_char(text[i])) {
      ++i;
    }
    std::string_view const name = text.substr(start, i - start);
    out += name;
    if (!names_a_secret(name)) { continue; }
    std::size_t from = i;
    if (start > 0 && text[start - 1] == '<' && from < text.size() && text[from] == '>') {
      // An XML element's content, to the next tag.
      out += '>';
      out += hidden;
      auto const close = text.find('<', from);
      i                = close == std::string_view::npos ? text.size() : close;
      continue;
    }
    if (from < text.size() && text[from] == '"') { ++from; }  // a JSON member's closing quote
    while (from < text.size() && (text[from] == ' ' || text[from] == '\t')) {
      ++from;
    }
    if (from >= text.size() || (text[from] != '=' && text[from] != ':')) { continue; }
    // After ':' a header's value, which may hold spaces, runs to the line's end.
    bool const header = text[from] == ':';
    ++from;
    while (from < text.size() && (text[from] == ' ' || text[from] == '\t' || text[from] == '"')) {
      ++from;
    }
    out.append(text.substr(i, from - i));
    i = from;
    while (i < text.size() && !ends_value(text[i], header)) {
      ++i;
    }
    if (i > from) { out += hidden; }
  }
  // Access key ids wherever they stand, inside names too.
  std::string shown;
  shown.reserve(out.size());
  for (std::size_t at = 0; at < out.size();) {
    if (is_access_key_id(out, at)) {
      shown += hidden;
      at += 20;
    } else {
      shown += out[at++];
    }
  }
  return shown;
}

std::string error_body_for_message(std::string_view body)
{
  auto const element = [&](std::string_view name) -> std::string_view {
    // Appends rather than operator+ chains: GCC 12 reports a false -Wrestrict on those.
    std::string open{"<"};
    open.append(name).append(">");
    std::string close{"</"};
    close.append(name).append(">");
    auto const begin = body.find(open);
    if (begin == std::string_view::npos) { return {}; }
    auto const from = begin + open.size();
    auto const end  = body.find(close, from);
    return end == std::string_view::npos ? std::string_view{} : body.substr(from, end - from);
  };
  std::string shown;
  if (body.find("<Error>") != std::string_view::npos && !element("Code").empty()) {
    // Each redacted alone: "SignatureDoesNotMatch: ..." would read as a value named Signature.
    shown = redact(std::string{element("Code")}.substr(0, 100));
    if (auto const message = element("Message"); !message.empty()) {
      shown.append(": ").append(redact(message.substr(0, 200)));
    }
  } else {
    return server_text_for_message(body);
  }
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) { c = '?'; }
  }
  return shown;
}

std::string server_text_for_message(std::string_view text)
{
  std::string shown = redact(text.substr(0, text.find_first_of("\r\n")).substr(0, 200));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) { c = '?'; }
  }
  return shown;
}

}  // namespace kvikio::detail
