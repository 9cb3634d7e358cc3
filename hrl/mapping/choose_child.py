"""The child process of `hrl.mapping.instantiate.choose_in_child`:
`python -m hrl.mapping.choose_child PAYLOAD` prints one JSON line on stdout, or a one-line
error on stderr and exits 2 on bad input (a bad profile, a machine too far from the profiled
one). A module of its own so that what it pickles names `hrl.mapping.instantiate`'s classes,
not `__main__`'s.
"""

from __future__ import annotations

import json
import sys

from hrl.mapping.instantiate import _child_main

if __name__ == "__main__":
    try:
        print(json.dumps(_child_main(json.loads(sys.argv[1]))))
    except (ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
