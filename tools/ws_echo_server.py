"""A strict, real WebSocket echo server (Python's `websockets`), for wirebench's peer tests.

Usage: python3 tools/ws_echo_server.py PORT [SECONDS]
Prints "ready" once listening on 127.0.0.1:PORT; stops after SECONDS (default 600).
No compression, 16 MiB message limit (the same as `wirebench serve ws`).
"""
import asyncio
import sys

from websockets.asyncio.server import serve


async def echo(ws):
    async for message in ws:
        await ws.send(message)


async def main(port: int, seconds: float) -> None:
    async with serve(echo, "127.0.0.1", port, compression=None, max_size=16 * 2**20):
        print("ready", flush=True)
        await asyncio.sleep(seconds)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 600.0))
