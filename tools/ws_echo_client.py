"""A real WebSocket client (Python's `websockets`) checking an echo server, for wirebench's
peer tests: binary and text echoes, a ping, then the close handshake.

Usage: python3 tools/ws_echo_client.py ws://127.0.0.1:PORT/
Prints one line per check and exits 0 when all pass.
"""
import asyncio
import sys

from websockets.asyncio.client import connect


async def main(url: str) -> None:
    async with connect(url, compression=None, max_size=16 * 2**20) as ws:
        for message in [b"x" * 500, b"y" * 70000, "héllo text", b""]:
            await ws.send(message)
            echo = await asyncio.wait_for(ws.recv(), 5)
            assert echo == message, f"echo differs for a {type(message).__name__} of {len(message)}"
            print(f"echo ok: {type(message).__name__} of {len(message)}")
        pong = await ws.ping(b"hi")
        await asyncio.wait_for(pong, 5)
        print("ping ok")
    # Leaving the block ran the close handshake; websockets records the server's close frame.
    assert ws.close_code == 1000, f"close code {ws.close_code}"
    print(f"close ok: {ws.close_code}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
