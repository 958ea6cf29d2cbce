"""``python -m svc_async ...``: the same command line as ``svc-async``.

Python imports the package (``svc_async/__init__``, about 0.3 s: aiohttp, cattrs) before
this module runs, so a Ctrl-C in that window still ends in Python's own traceback; only
a lazy ``__init__`` could close it. From here on, Ctrl-C is one line and exit 130.
"""

from __future__ import annotations

import sys


def _run() -> int:
    """Import and run the CLI; Ctrl-C while it loads is one line too, not a traceback."""
    try:
        from .cli import main

        return main()
    except KeyboardInterrupt:
        print("svc-async: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(_run())
