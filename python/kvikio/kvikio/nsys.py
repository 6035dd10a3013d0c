# SPDX-License-Identifier: Apache-2.0
"""Where Nsight Systems plugins of KvikIO would be installed."""

from __future__ import annotations

import os
import sys


def nsys_plugin_search_dir() -> str:
    """``<prefix>/share/kvikio/nsys-plugins`` of this Python environment (as upstream's
    fallback); the directory need not exist: this project installs no plugin."""
    return os.path.join(sys.prefix, "share", "kvikio", "nsys-plugins")
