/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Uses libkvikio as a downstream project does: prints the version, runs one task on the pool,
 * and, where the library has remote I/O, makes an HTTP endpoint (no request is sent).
 */
#include <iostream>

#include <kvikio/defaults.hpp>
#include <kvikio/version_config.hpp>
#ifdef KVIKIO_LIBCURL_FOUND
#include <kvikio/remote_handle.hpp>
#elif defined(DOWNSTREAM_NEEDS_REMOTE)
#error "libkvikio came without remote I/O (KVIKIO_LIBCURL_FOUND is not defined)"
#endif

int main()
{
  int const answer = kvikio::defaults::thread_pool().submit_task([] { return 42; }).get();
  std::cout << "downstream: KvikIO " << KVIKIO_VERSION_MAJOR << "." << KVIKIO_VERSION_MINOR
            << " task_size=" << kvikio::defaults::task_size() << " answer=" << answer;
#ifdef KVIKIO_LIBCURL_FOUND
  kvikio::HttpEndpoint const endpoint{"http://127.0.0.1:9/object"};
  std::cout << " remote=" << endpoint.str();
#endif
  std::cout << "\n";
  return answer == 42 ? 0 : 1;
}
