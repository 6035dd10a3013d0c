# SPDX-License-Identifier: Apache-2.0
"""The version (from VERSION, through the C++ library) and the git commit it was built from."""

from importlib import resources

from kvikio._lib import __version__


def _git_commit() -> str:
    try:
        return resources.files(__package__).joinpath("GIT_COMMIT").read_text().strip()
    except (FileNotFoundError, OSError):
        return ""


__git_commit__ = _git_commit()

__all__ = ["__git_commit__", "__version__"]
