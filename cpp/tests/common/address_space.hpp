/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <sys/resource.h>

#include <cstddef>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace kvikio::test {

/// Caps the address space at what the process maps now plus 64 MiB, so that thread stacks run out
/// after a few (how a test makes thread creation fail); returns the limit before (restore it
/// with setrlimit). Only for a child of its own: a sanitizer's runtime breaks under the cap.
inline rlimit cap_address_space()
{
  std::ifstream status{"/proc/self/status"};
  std::size_t vm_kib = 0;
  for (std::string key; status >> key;) {
    if (key == "VmSize:") {
      status >> vm_kib;
      break;
    }
  }
  EXPECT_GT(vm_kib, 0U);
  rlimit const cap{(vm_kib << 10) + (64UL << 20), RLIM_INFINITY};
  rlimit old{};
  EXPECT_EQ(::getrlimit(RLIMIT_AS, &old), 0);
  EXPECT_EQ(::setrlimit(RLIMIT_AS, &cap), 0);
  return old;
}

}  // namespace kvikio::test
