#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Shows that ci/check-layers.py fails where it should: on a copy of cpp/ and docs/design.md,
each of the wrong-way includes that issue 23 found (and a few more kinds) is put back, and the
check must fail naming it; the untouched copy must pass.

Usage: ci/test-check-layers.py [repository root]
"""

import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(sys.argv.pop(1) if len(sys.argv) > 1 else
                    pathlib.Path(__file__).resolve().parent.parent).resolve()
CHECK = ROOT / "ci" / "check-layers.py"


class LayerCheck(unittest.TestCase):
    def setUp(self):
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="layers-"))
        shutil.copytree(ROOT / "cpp" / "src", self.tmp / "cpp" / "src")
        shutil.copytree(ROOT / "cpp" / "include", self.tmp / "cpp" / "include")
        (self.tmp / "docs").mkdir()
        shutil.copy(ROOT / "docs" / "design.md", self.tmp / "docs" / "design.md")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def check(self):
        run = subprocess.run([sys.executable, str(CHECK), "--root", str(self.tmp)],
                             capture_output=True, text=True, check=False)
        return run.returncode, run.stdout + run.stderr

    def include(self, rel, header):
        """Adds an include of `header` after the first include of cpp/src/<rel>: `<header>` for
        an installed header (kvikio/...), `"header"` for one of the library's own."""
        path = self.tmp / "cpp" / "src" / rel
        text = path.read_text()
        first = re.search(r"^#include .*$", text, re.M)
        line = f"<{header}>" if header.startswith("kvikio/") else f'"{header}"'
        path.write_text(text[: first.end()] + f"\n#include {line}" + text[first.end() :])

    def assert_fails_naming(self, *words):
        rc, out = self.check()
        self.assertEqual(rc, 1, out)
        for w in words:
            self.assertIn(w, out)

    def test_the_repository_as_it_is_passes(self):
        rc, out = self.check()
        self.assertEqual(rc, 0, out)

    def test_posix_mover_calling_io_uring(self):
        # The choice of mover belongs to io/local_plan.cpp, not to a mover.
        self.include("io/mover/posix_mover.cpp", "io/io_uring/io_uring_io.hpp")
        self.assert_fails_naming("cpp/src/io/mover/posix_mover.cpp", "io_uring_io.hpp",
                                 "higher layer")

    def test_io_uring_mover_taking_cufile(self):
        self.include("io/io_uring/io_uring_mover.cpp", "io/cufile/cufile_io.hpp")
        self.assert_fails_naming("cpp/src/io/io_uring/io_uring_mover.cpp", "sibling layer")

    def test_a_mover_choosing_among_movers(self):
        self.include("io/cufile/cufile_io.cpp", "io/local_plan.hpp")
        self.assert_fails_naming("cpp/src/io/cufile/cufile_io.cpp", "higher layer")

    def test_staging_asking_the_plan(self):
        self.include("io/staging/device_staging.cpp", "io/local_plan.hpp")
        self.assert_fails_naming("cpp/src/io/staging/device_staging.cpp", "higher layer")

    def test_settings_asking_the_cufile_driver(self):
        self.include("config/defaults.cpp", "kvikio/cufile/driver.hpp")
        self.assert_fails_naming("cpp/src/config/defaults.cpp", "higher layer")

    def test_stream_ordered_executor_calling_the_posix_backend(self):
        self.include("parallel/stream_ordered.cpp", "kvikio/detail/posix_io.hpp")
        self.assert_fails_naming("cpp/src/parallel/stream_ordered.cpp", "posix_io.hpp",
                                 "higher layer")

    def test_stream_future_implemented_in_io_again(self):
        # StreamFuture implemented in io/ (where remote_handle.cpp, a sibling, cannot reach it):
        # in io/, the header it implements is no longer of its layer.
        src = self.tmp / "cpp" / "src"
        (src / "parallel" / "stream.cpp").rename(src / "io" / "stream.cpp")
        self.assert_fails_naming("cpp/src/io/stream.cpp", "implements kvikio/stream.hpp")

    def test_remote_including_an_io_header(self):
        self.include("remote/remote_handle.cpp", "kvikio/file_handle.hpp")
        self.assert_fails_naming("cpp/src/remote/remote_handle.cpp", "sibling layer")

    def test_bounce_buffer_taking_the_page_size_from_the_posix_backend(self):
        self.include("cuda/bounce_buffer.cpp", "kvikio/detail/posix_io.hpp")
        self.assert_fails_naming("cpp/src/cuda/bounce_buffer.cpp", "higher layer")

    def test_logger_reading_settings_through_config(self):
        self.include("core/logger.cpp", "kvikio/defaults.hpp")
        self.assert_fails_naming("cpp/src/core/logger.cpp", "higher layer")

    def test_env_parsing_moved_back_into_config(self):
        src = self.tmp / "cpp" / "src"
        (src / "core" / "env.cpp").rename(src / "config" / "env.cpp")
        self.assert_fails_naming("cpp/src/config/env.cpp", "implements kvikio/detail/env.hpp")

    def test_a_public_header_including_upward(self):
        path = self.tmp / "cpp" / "include" / "kvikio" / "event.hpp"
        path.write_text(path.read_text() + "\n#include <kvikio/file_handle.hpp>\n")
        self.assert_fails_naming("cpp/include/kvikio/event.hpp", "higher layer")

    def test_an_exception_nothing_needs(self):
        design = self.tmp / "docs" / "design.md"
        text = design.read_text().replace(
            "| file | include | why |\n|---|---|---|\n",
            "| file | include | why |\n|---|---|---|\n"
            "| `cpp/src/core/error.cpp` | `kvikio/file_handle.hpp` | stale |\n", 1)
        self.assertNotEqual(text, design.read_text(), "the exceptions table has moved")
        design.write_text(text)
        self.assert_fails_naming("cpp/src/core/error.cpp", "remove it")

    def test_a_file_the_check_cannot_read(self):
        (self.tmp / "cpp" / "src" / "cuda" / "kernel.cu").write_text("int k;\n")
        self.assert_fails_naming("cpp/src/cuda/kernel.cu", "not a .cpp or .hpp")

    def test_a_source_in_no_layer(self):
        (self.tmp / "cpp" / "src" / "extra").mkdir()
        (self.tmp / "cpp" / "src" / "extra" / "x.cpp").write_text("int x;\n")
        self.assert_fails_naming("cpp/src/extra/x.cpp", "in no layer")


if __name__ == "__main__":
    unittest.main(verbosity=1)
