/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * KVIKIO_* environment values: any text in any variable is either taken or rejected with a
 * std::invalid_argument that names the variable. The first byte picks the variable, the rest
 * is its value; the parsers are also called directly.
 */
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/env.hpp>

namespace {

template <typename F>
void taken_or_invalid(F&& f, std::string_view name)
{
  try {
    f();
  } catch (std::invalid_argument const& e) {
    if (std::string_view{e.what()}.find(name) == std::string_view::npos) {
      std::abort();  // the error does not name the variable
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size)
{
  if (size == 0) { return 0; }
  auto const variables = kvikio::detail::Settings::known_variables();
  std::string const name{variables[data[0] % variables.size()]};
  std::string const value(reinterpret_cast<char const*>(data + 1), size - 1);
  if (value.find('\0') != std::string::npos) { return 0; }  // no environment holds a NUL
  ::setenv(name.c_str(), value.c_str(), 1);
  taken_or_invalid([] { (void)kvikio::detail::Settings::from_environment(); }, name);
  ::unsetenv(name.c_str());
  taken_or_invalid([&] { (void)kvikio::detail::parse_unsigned("X_U", value, 1, 4096); }, "X_U");
  taken_or_invalid([&] { (void)kvikio::detail::parse_bool("X_B", value); }, "X_B");
  taken_or_invalid([&] { (void)kvikio::detail::parse_http_status_codes("X_H", value); }, "X_H");
  taken_or_invalid([&] { (void)kvikio::detail::parse_local_io_backend("X_L", value); }, "X_L");
  return 0;
}
