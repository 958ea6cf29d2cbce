"""``python -m svc_async.cli ...``: the same command line as ``svc-async``.

The package is loaded before this module runs, and ``main`` turns a Ctrl-C into one line
and exit 130 itself.
"""

from __future__ import annotations

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
