"""``python -m svc_async ...``: the same command line as ``svc-async``."""

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
