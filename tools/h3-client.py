#!/usr/bin/env python3
"""h3-client.py URL CONNS STREAMS SECONDS [RATE] — aioquic's HTTP/3 client (PyPI) as a load
generator, a peer client of tools/vs-peers.sh's CPU study: CONNS QUIC connections (each its own
UDP socket, as wirebench's), STREAMS tasks per connection each sending GETs back to back — or,
with RATE, each on its share of RATE requests a second (a task late on its schedule sends at
once) — without verifying the certificate (the built-in server's is self-signed), for SECONDS;
then it prints `requests N errors E seconds S`. One event loop: one CPU, as a pinned core."""

import asyncio
import ssl
import sys
import time
from urllib.parse import urlparse

from aioquic.asyncio import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.waiting = {}  # stream -> [future, status]

    def quic_event_received(self, event):
        for e in self.h3.handle_event(event):
            entry = self.waiting.get(getattr(e, "stream_id", None))
            if entry is None:
                continue
            if isinstance(e, HeadersReceived):
                entry[1] = dict(e.headers).get(b":status")
            if isinstance(e, (HeadersReceived, DataReceived)) and e.stream_ended:
                del self.waiting[e.stream_id]
                entry[0].set_result(entry[1])

    async def get(self, authority, path):
        stream = self._quic.get_next_available_stream_id()
        future = asyncio.get_running_loop().create_future()
        self.waiting[stream] = [future, None]
        self.h3.send_headers(
            stream,
            [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", authority), (b":path", path)],
            end_stream=True,
        )
        self.transmit()
        return await future


async def main(url, conns, streams, seconds, rate):
    u = urlparse(url)
    authority, path = u.netloc.encode(), (u.path or "/").encode()
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=ssl.CERT_NONE)
    counts = {"done": 0, "failed": 0}
    start = time.monotonic()
    end = start + seconds
    interval = conns * streams / rate if rate > 0 else 0.0

    async def worker(client, k):
        due = start + interval * k / (conns * streams)
        while True:
            if interval > 0:
                if due >= end:
                    return
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                due += interval
            elif time.monotonic() >= end:
                return
            try:
                status = await asyncio.wait_for(client.get(authority, path), 10)
                counts["done" if status == b"200" else "failed"] += 1
            except Exception:
                counts["failed"] += 1
                return

    async def connection(i):
        async with connect(u.hostname, u.port, configuration=config, create_protocol=Client) as client:
            await asyncio.gather(*(worker(client, i * streams + j) for j in range(streams)))

    await asyncio.gather(*(connection(i) for i in range(conns)))
    print(f"requests {counts['done']} errors {counts['failed']} seconds {time.monotonic() - start:.3f}")


if __name__ == "__main__":
    if len(sys.argv) not in (5, 6):
        sys.exit("usage: h3-client.py URL CONNS STREAMS SECONDS [RATE]")
    rate = float(sys.argv[5]) if len(sys.argv) == 6 else 0.0
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), rate))
