"""A strict, real WebSocket echo server (Python's `websockets`), for wirebench's peer tests.

Usage: python3 tools/ws_echo_server.py PORT [SECONDS] [PREFIX] [CERT KEY]
Prints "ready" once listening on 127.0.0.1:PORT; stops after SECONDS (default 600). With PREFIX,
every echo starts with it (as a server in the wsbench study answered: `bench --expect any`).
With CERT and KEY (PEM files), it serves wss:// (Python's ssl module, i.e. OpenSSL).
No compression, 16 MiB message limit (the same as `wirebench serve ws`).
"""
import asyncio
import ssl
import sys

from websockets.asyncio.server import serve


def echo(prefix: str):
    async def handler(ws):
        async for message in ws:
            if isinstance(message, str):
                await ws.send(prefix + message)
            else:
                await ws.send(prefix.encode() + message)

    return handler


async def main(port: int, seconds: float, prefix: str, tls) -> None:
    context = None
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
    async with serve(
        echo(prefix), "127.0.0.1", port, compression=None, max_size=16 * 2**20, ssl=context
    ):
        print("ready", flush=True)
        await asyncio.sleep(seconds)


if __name__ == "__main__":
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 600.0
    tls = sys.argv[4:6] if len(sys.argv) > 5 else None
    asyncio.run(main(int(sys.argv[1]), seconds, sys.argv[3] if len(sys.argv) > 3 else "", tls))
