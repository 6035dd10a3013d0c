/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * What a server or a URL hands us passes here before it reaches an exception's text or a log
 * line: a server may echo a request (S3's SignatureDoesNotMatch holds the canonical request,
 * with the session token), and a URL may carry a signature. In detail/ for the fuzz target.
 */
#pragma once

#include <string>
#include <string_view>

namespace kvikio::detail {

/**
 * @brief `text` with whatever may be a secret hidden as "<hidden>": the values of parameters,
 * headers and XML elements named like a credential (signature, credential, token, security
 * token, access key, authorization, password, secret, canonical request, string to sign), the
 * query of every URL, and AWS access key ids. Never throws but std::bad_alloc.
 */
[[nodiscard]] std::string redact(std::string_view text);

/**
 * @brief Text a server sent (a header's value, a JSON answer) as a message may quote it: its
 * first line cut to 200 bytes, control bytes shown as '?', redacted.
 */
[[nodiscard]] std::string server_text_for_message(std::string_view text);

/**
 * @brief What a server's error answer adds to a message: S3's error code and message when the
 * body is S3's XML error document ("NoSuchKey: The specified key does not exist."), otherwise
 * its first line cut to 200 bytes, control bytes shown as '?'; redacted either way. "" for an
 * empty body.
 */
[[nodiscard]] std::string error_body_for_message(std::string_view body);

}  // namespace kvikio::detail
