"""A real python-socketio server (aiohttp) for the peer tests: `python3 tools/sio_peer.py PORT PING_S`.

On `/` and `/chat` it acknowledges `message` with its argument and answers `ask` by emitting
`answer` with it.
"""
import sys

import socketio
from aiohttp import web

port, ping = int(sys.argv[1]), float(sys.argv[2])
sio = socketio.AsyncServer(async_mode="aiohttp", ping_interval=ping, ping_timeout=ping, transports=["websocket"])
app = web.Application()
sio.attach(app)

for nsp in ["/", "/chat"]:
    async def message(sid, data, nsp=nsp):
        return data

    async def ask(sid, data, nsp=nsp):
        await sio.emit("answer", data, to=sid, namespace=nsp)

    sio.on("message", message, namespace=nsp)
    sio.on("ask", ask, namespace=nsp)

print(f"listening on {port}", flush=True)
web.run_app(app, host="127.0.0.1", port=port, print=None)
