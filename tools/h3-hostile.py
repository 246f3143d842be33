#!/usr/bin/env python3
"""h3-hostile.py ROLE MODE ... — HTTP/3 peers that misbehave on purpose, on aioquic (PyPI), for
tests/hostile/h3.rs. Loopback only. Every mode is bounded in time (at most BOUND seconds).

Servers (ROLE server: PORT CERT KEY MODE), each printing `listening PORT` once it serves and, on
SIGTERM, `answered N` (the requests it answered):
  early     answers a POST as soon as its HEADERS arrive, and asks the client to stop sending its
            body (STOP_SENDING H3_NO_ERROR, RFC 9114 §4.1)
  goaway    says GOAWAY(0) at once on every connection and answers nothing
  close5    closes every connection (H3_NO_ERROR) once it has answered 5 requests on it
  endless   answers every request with HEADERS and then DATA for ever (a trickle every 2 ms)

Clients (ROLE client: PORT MODE [N]), against `serve h3` (its certificate is not checked),
printing one JSON line of what they saw:
  stop-sending N   N request streams (a POST's HEADERS, then STOP_SENDING and RESET_STREAM
                   of this side's half): the RESET_STREAMs the server answered with, and the
                   request streams it allows at the end (MAX_STREAMS)
  close-control    finishes its control stream: the connection's close code (H3_CLOSED_CRITICAL_STREAM)
  close-qpack      finishes its QPACK encoder stream: likewise (RFC 9204 §4.2)
  initials N       N connections' first flights from one UDP socket, never another datagram
                   (a handshake flood from one address): prints `sent` and waits BOUND s
  partial N        N connections, each 100 streams of a HEADERS frame announced at 16,000
                   octets and sent all but one: how each connection ended
  slow-head        one stream's HEADERS half sent, then nothing: how the stream ended, and when
  tiny-window      a GET with a stream window of 1 octet (the answer cannot go): the close code
  idle N SECONDS   N connections set up, then silent for SECONDS: prints `ready` once all are up
  datagrams        whether the server's transport parameters offer QUIC DATAGRAM frames
"""

import asyncio
import json
import signal
import socket
import ssl
import sys
import time

from aioquic.asyncio import connect, serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.buffer import encode_uint_var
from aioquic.h3.connection import H3_ALPN, H3Connection, encode_frame
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.events import ConnectionTerminated, StreamReset

BOUND = 20.0
GOAWAY = 0x7
HEADERS = 0x1
answered = 0


class Server(QuicConnectionProtocol):
    mode = "early"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = None
        self.here = 0

    def quic_event_received(self, event):
        if self.h3 is None:
            self.h3 = H3Connection(self._quic)
            if self.mode == "goaway":
                frame = encode_frame(GOAWAY, encode_uint_var(0))
                self._quic.send_stream_data(self.h3._local_control_stream_id, frame)
                self.transmit()
        for e in self.h3.handle_event(event):
            if self.mode == "goaway":
                continue
            if isinstance(e, HeadersReceived):
                method = dict(e.headers).get(b":method", b"GET")
                if self.mode == "early" and method == b"POST" and not e.stream_ended:
                    self._quic.stop_stream(e.stream_id, 0x100)
                    self.answer(e.stream_id, b"early")
                elif e.stream_ended:
                    self.answer(e.stream_id, b"Hello World")
            elif isinstance(e, DataReceived) and e.stream_ended and self.mode != "early":
                self.answer(e.stream_id, b"OK")

    def answer(self, stream, body):
        global answered
        if self.mode == "endless":
            asyncio.ensure_future(self.trickle(stream))
            return
        headers = [(b":status", b"200"), (b"content-length", str(len(body)).encode())]
        self.h3.send_headers(stream, headers)
        self.h3.send_data(stream, body, end_stream=True)
        answered += 1
        self.here += 1
        if self.mode == "close5" and self.here == 5:
            self._quic.close(error_code=0x100)
        self.transmit()

    async def trickle(self, stream):
        self.h3.send_headers(stream, [(b":status", b"200")])
        until = time.monotonic() + BOUND
        while time.monotonic() < until and not self._quic._close_pending:
            try:
                self.h3.send_data(stream, b"x" * 100, end_stream=False)
            except Exception:
                return
            self.transmit()
            await asyncio.sleep(0.002)


async def run_server(port, cert, key, mode):
    Server.mode = mode
    config = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN, max_datagram_frame_size=None)
    config.load_cert_chain(cert, key)
    await serve("127.0.0.1", port, configuration=config, create_protocol=Server)
    print(f"listening {port}", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    try:
        await asyncio.wait_for(stop.wait(), timeout=60)
    except asyncio.TimeoutError:
        pass
    print(f"answered {answered}", flush=True)


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.resets = {}
        self.closed = None
        self.done = asyncio.Event()

    def quic_event_received(self, event):
        if isinstance(event, StreamReset):
            self.resets[event.stream_id] = (event.error_code, time.monotonic())
        if isinstance(event, ConnectionTerminated):
            self.closed = event.error_code
            self.done.set()
        self.h3.handle_event(event)

    def post_headers(self, stream):
        headers = [(b":method", b"POST"), (b":scheme", b"https"), (b":authority", b"localhost"), (b":path", b"/")]
        self.h3.send_headers(stream, headers, end_stream=False)


def client_config(**kw):
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=ssl.CERT_NONE, **kw)
    return config


async def wait_closed(c, limit):
    try:
        await asyncio.wait_for(c.done.wait(), timeout=limit)
    except asyncio.TimeoutError:
        pass


async def run_client(port, mode, args):
    out = {}
    config_kw = {"max_datagram_frame_size": 65536} if mode == "datagrams" else {}
    if mode == "tiny-window":
        # A window of one octet, never raised: aioquic's credit updates switched off.
        config_kw["max_stream_data"] = 1
        QuicConnection._write_stream_limits = lambda self, builder, space, stream: None
    if mode in ("initials",):
        return initials(port, int(args[0]))
    if mode in ("partial", "idle"):
        return await many(port, mode, args)
    async with connect("127.0.0.1", port, configuration=client_config(**config_kw), create_protocol=Client) as c:
        q = c._quic
        if mode == "stop-sending":
            n = int(args[0])
            for i in range(n):
                stream = q.get_next_available_stream_id()
                c.post_headers(stream)
                q.stop_stream(stream, 0x10C)
                q.reset_stream(stream, 0x10C)
                c.transmit()
                if i % 50 == 49:
                    await asyncio.sleep(0.2)
            await asyncio.sleep(1.0)
            out = {"resets": len(c.resets), "max_streams_bidi": q._remote_max_streams_bidi}
        elif mode in ("close-control", "close-qpack"):
            stream = c.h3._local_control_stream_id if mode == "close-control" else c.h3._local_encoder_stream_id
            await asyncio.sleep(0.1)
            q.send_stream_data(stream, b"", end_stream=True)
            c.transmit()
            await wait_closed(c, 5)
            out = {"closed": c.closed}
        elif mode == "slow-head":
            stream = q.get_next_available_stream_id()
            q.send_stream_data(stream, encode_uint_var(HEADERS) + encode_uint_var(100) + b"\0" * 50)
            c.transmit()
            started = time.monotonic()
            until = started + BOUND
            while stream not in c.resets and c.closed is None and time.monotonic() < until:
                await asyncio.sleep(0.05)
            got = c.resets.get(stream)
            out = {"reset": got[0] if got else None, "after_s": round(got[1] - started, 2) if got else None,
                   "closed": c.closed}
        elif mode == "tiny-window":
            stream = q.get_next_available_stream_id()
            headers = [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"localhost"), (b":path", b"/")]
            c.h3.send_headers(stream, headers, end_stream=True)
            c.transmit()
            started = time.monotonic()
            await wait_closed(c, BOUND)
            out = {"closed": c.closed, "after_s": round(time.monotonic() - started, 2)}
        elif mode == "datagrams":
            await asyncio.sleep(0.2)
            out = {"offered": q._remote_max_datagram_frame_size}
    print(json.dumps(out), flush=True)


def initials(port, n):
    """N first flights from one socket: each a new connection's Initial, never followed."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    now = time.time()
    for _ in range(n):
        q = QuicConnection(configuration=client_config())
        q.connect(("127.0.0.1", port), now=now)
        for data, addr in q.datagrams_to_send(now=now):
            sock.sendto(data, addr)
    print(json.dumps({"sent": n}), flush=True)
    # Read and drop whatever comes back, until told to stop (bounded).
    sock.settimeout(0.2)
    until = time.monotonic() + BOUND
    while time.monotonic() < until:
        try:
            sock.recv(65536)
        except (socket.timeout, OSError):
            pass


async def many(port, mode, args):
    n = int(args[0])
    conns = []
    for _ in range(n):
        cm = connect("127.0.0.1", port, configuration=client_config(), create_protocol=Client)
        c = await cm.__aenter__()
        conns.append((cm, c))
    if mode == "idle":
        print("ready", flush=True)
        await asyncio.sleep(min(float(args[1]), BOUND))
        out = {"open": sum(1 for _, c in conns if c.closed is None)}
    else:
        for _, c in conns:
            q = c._quic
            for _ in range(100):
                stream = q.get_next_available_stream_id()
                q.send_stream_data(stream, encode_uint_var(HEADERS) + encode_uint_var(16000) + b"\0" * 15999)
            c.transmit()
        for _, c in conns:
            await wait_closed(c, 5)
        out = {"closed": [c.closed for _, c in conns]}
    print(json.dumps(out), flush=True)
    for cm, c in conns:
        c.close()
    await asyncio.sleep(0.1)


if __name__ == "__main__":
    role = sys.argv[1]
    if role == "server":
        asyncio.run(run_server(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]))
    else:
        asyncio.run(run_client(int(sys.argv[2]), sys.argv[3], sys.argv[4:]))
