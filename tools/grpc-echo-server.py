#!/usr/bin/env python3
"""A real gRPC server for the peer tests (Python grpcio, no protoc): any unary method echoes
its request message, except `/wirebench.Echo/Fail`, which answers UNAVAILABLE. Usage:
grpc-echo-server.py PORT — prints `listening PORT` once it serves, and the calls it answered
(`calls N`) when stopped with SIGTERM or SIGINT."""
import signal
import sys
import threading
from concurrent import futures

import grpc

calls = 0
lock = threading.Lock()


def echo(request, context):
    global calls
    with lock:
        calls += 1
    return request


def fail(request, context):
    global calls
    with lock:
        calls += 1
    context.abort(grpc.StatusCode.UNAVAILABLE, "asked to fail")


class Any(grpc.GenericRpcHandler):
    def service(self, details):
        method = fail if details.method == "/wirebench.Echo/Fail" else echo
        return grpc.unary_unary_rpc_method_handler(method)


server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
server.add_generic_rpc_handlers((Any(),))
port = server.add_insecure_port(f"127.0.0.1:{sys.argv[1]}")
server.start()
print(f"listening {port}", flush=True)
done = threading.Event()
for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda *_: done.set())
done.wait()
server.stop(0)
print(f"calls {calls}", flush=True)
