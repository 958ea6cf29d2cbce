"""The fake stops when cancelled even if a new job woke it at the same moment.

Python 3.11's ``asyncio.wait_for`` returns the inner result and drops a cancellation
that arrives just after the inner await finished; a watcher that waited that way missed
Ctrl-C in the demo (SIGINT during a job create) and ``serve`` never returned.
"""

from __future__ import annotations

import asyncio
import time

from svc_async.testing.clock import FakeClock
from svc_async.testing.webhooks import WebhookDispatcher


async def test_aclose_right_after_a_wake_stops_the_watcher() -> None:
    clock = FakeClock()
    # Something falls due in 100 s, so the watcher sleeps with a timeout.
    dispatcher = WebhookDispatcher(lambda now: ([], now + 100.0), clock, clock.now)
    dispatcher.start()
    await asyncio.sleep(0.01)  # the watcher is asleep
    assert dispatcher.running
    dispatcher.wake()  # a job was created ...
    began = time.monotonic()
    closing = asyncio.create_task(dispatcher.aclose())  # ... and Ctrl-C came at once
    done, _ = await asyncio.wait({closing}, timeout=2.0)
    took = time.monotonic() - began
    assert done == {closing}, "aclose did not return"
    assert took < 1.0
    assert not dispatcher.running
