#!/usr/bin/env python3
"""h2-strict.py PORT — a strict HTTP/2 server (h2c, prior knowledge) on Python's `h2` (PyPI),
with its header validation on: every request it takes is answered `200 Hello World`; a request
`h2` calls malformed (a `te` other than `trailers`, a connection-specific header, an upper-case
name, a pseudo-header out of place …) ends its connection with `h2`'s ProtocolError, as a
strict server would. Prints `listening PORT`, and on SIGTERM `answered N errors M` (tests
compare them with the client's counts). Loopback only; each connection bounded by a 60 s
socket timeout."""

import signal
import socket
import sys
import threading

import h2.config
import h2.connection
import h2.events
import h2.exceptions

answered = 0
errors = 0
lock = threading.Lock()


def serve(sock):
    global answered, errors
    config = h2.config.H2Configuration(client_side=False, validate_inbound_headers=True)
    conn = h2.connection.H2Connection(config=config)
    conn.initiate_connection()
    sock.settimeout(60)
    try:
        sock.sendall(conn.data_to_send())
        while True:
            data = sock.recv(65536)
            if not data:
                return
            try:
                events = conn.receive_data(data)
            except h2.exceptions.ProtocolError:
                with lock:
                    errors += 1
                sock.sendall(conn.data_to_send())
                return
            for e in events:
                if isinstance(e, h2.events.DataReceived):
                    conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                if isinstance(e, h2.events.StreamEnded):
                    conn.send_headers(e.stream_id, [(":status", "200"), ("content-length", "11")])
                    conn.send_data(e.stream_id, b"Hello World", end_stream=True)
                    with lock:
                        answered += 1
            sock.sendall(conn.data_to_send())
    except (OSError, h2.exceptions.H2Error):
        return
    finally:
        sock.close()


def main(port):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    listener.settimeout(0.2)
    print(f"listening {port}", flush=True)
    while not stop.is_set():
        try:
            sock, _ = listener.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve, args=(sock,), daemon=True).start()
    print(f"answered {answered} errors {errors}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]))
