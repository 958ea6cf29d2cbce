"""``python -m svc_async.cli ...``: the same command line as ``svc-async``."""

from __future__ import annotations

import sys

from .. import __main__ as _entry

if __name__ == "__main__":
    sys.exit(_entry._run())
