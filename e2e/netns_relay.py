"""A TCP relay for the partition tests: ``python -m e2e.netns_relay LISTEN_HOST:PORT TARGET_HOST:PORT``.

Run once in the test's network namespace and once inside the cut-off agent's (``ip netns exec``),
so the agent reaches the federation's loopback address through the veth pair the test can take
down. Bytes are copied as they are (TLS passes through; the agent still verifies 127.0.0.1).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def main(listen: str, target: str) -> None:
    target_host, target_port = target.rsplit(":", 1)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(target_host, int(target_port)), 5)
        except (OSError, TimeoutError):
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    host, port = listen.rsplit(":", 1)
    server = await asyncio.start_server(serve, host, int(port))
    print(f"relay {listen} -> {target} ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
