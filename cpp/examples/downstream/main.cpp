/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Uses the installed headers and library: prints the version and runs one task on the pool.
 */
#include <iostream>

#include <kvikio/defaults.hpp>
#include <kvikio/version_config.hpp>

int main()
{
  int const answer = kvikio::defaults::thread_pool().submit_task([] { return 42; }).get();
  std::cout << "downstream: KvikIO " << KVIKIO_VERSION_MAJOR << "." << KVIKIO_VERSION_MINOR
            << " task_size=" << kvikio::defaults::task_size() << " answer=" << answer << "\n";
  return answer == 42 ? 0 : 1;
}
