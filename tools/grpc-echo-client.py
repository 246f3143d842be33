#!/usr/bin/env python3
"""A real gRPC client for the peer tests (Python grpcio, no protoc): calls HOST:PORT's method
PATH (e.g. /wirebench.Echo/Unary) COUNT times with a message of SIZE bytes, checks every answer
is the message echoed, and prints `echo ok COUNT` — or the status of the first call that
failed. Usage: grpc-echo-client.py HOST:PORT PATH COUNT SIZE"""
import sys

import grpc

target, path, count, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
message = bytes(i % 251 for i in range(size))
with grpc.insecure_channel(target) as channel:
    call = channel.unary_unary(path)
    for i in range(count):
        try:
            answer = call(message, timeout=10)
        except grpc.RpcError as e:
            print(f"call {i}: {e.code().name} {e.details()}")
            sys.exit(1)
        if answer != message:
            print(f"call {i}: answered {len(answer)} bytes, not the {size} sent")
            sys.exit(1)
print(f"echo ok {count}")
