#!/usr/bin/env python3
"""h3-server.py PORT CERT KEY — an HTTP/3 server on aioquic (PyPI), the real peer for `h3://`
tests: it answers every request as `serve http` does (`Hello World` for GET, its headers alone
for HEAD, `OK` for a request with a body), prints `listening PORT` once it serves, and on
SIGTERM `requests N`, the requests it answered (tests compare it with the client's count).
aioquic's QPACK is a real one (ls-qpack): this side's SETTINGS say what table it may use."""

import asyncio
import signal
import sys

from aioquic.asyncio import serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration

answered = 0


class Server(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = None
        self.methods = {}

    def quic_event_received(self, event):
        if self.h3 is None:
            self.h3 = H3Connection(self._quic)
        for e in self.h3.handle_event(event):
            if isinstance(e, HeadersReceived):
                self.methods[e.stream_id] = dict(e.headers).get(b":method", b"GET")
                if e.stream_ended:
                    self.answer(e.stream_id)
            elif isinstance(e, DataReceived) and e.stream_ended:
                self.answer(e.stream_id)

    def answer(self, stream):
        global answered
        method = self.methods.pop(stream, b"GET")
        body = b"Hello World" if method in (b"GET", b"HEAD") else b"OK"
        headers = [(b":status", b"200"), (b"content-length", str(len(body)).encode())]
        self.h3.send_headers(stream, headers, end_stream=method == b"HEAD")
        if method != b"HEAD":
            self.h3.send_data(stream, body, end_stream=True)
        self.transmit()
        answered += 1


async def main(port, cert, key):
    config = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN, max_datagram_frame_size=None)
    config.load_cert_chain(cert, key)
    await serve("127.0.0.1", port, configuration=config, create_protocol=Server)
    print(f"listening {port}", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    print(f"requests {answered}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3]))
