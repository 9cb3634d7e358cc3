"""`python -m hrl.replay.native`: build the native sum-tree kernels now (used by `make setup`).

Prints the cached library's path, or why the kernels cannot be built (exit status 1).
"""

from __future__ import annotations

import sys

from hrl.replay.native import NativeBuildError, build


def main() -> int:
    try:
        print(build())
    except NativeBuildError as e:
        print(f"hrl native kernels not built: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
