"""The fleet's store connection against a real redis-server: up, down, restarted."""

from __future__ import annotations

import redis.asyncio as aioredis

from .redis_server import RedisServer


async def test_the_test_server_is_a_real_redis(redis_url: str) -> None:
    client = aioredis.Redis.from_url(redis_url)
    try:
        assert await client.ping() is True
        info = await client.info("server")
        assert int(str(info["redis_version"]).split(".")[0]) >= 6  # XAUTOCLAIM needs 6.2
    finally:
        await client.aclose()


def test_a_killed_server_restarts_on_its_port(redis_server: RedisServer) -> None:
    port = redis_server.port
    redis_server.stop()
    redis_server.start()
    assert redis_server.port == port and redis_server.process is not None
