"""TOML text read by the standard library's reader (Python 3.11+), else by its backport `tomli` (a dependency of the
package before 3.11)."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from tomllib import TOMLDecodeError, loads
else:  # pragma: no cover
    from tomli import TOMLDecodeError, loads

__all__ = ["TOMLDecodeError", "loads"]
