#!/usr/bin/env bash
# Install the real peers the ignored tests run against: nginx, mosquitto and Chromium (Debian), nsqd (built
# from the Go module proxy into tools/bin/), Python's `websockets` (PyPI). Idempotent; needs root.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
NSQ_VERSION="${NSQ_VERSION:-v1.3.0}"

# nginx (HTTP/1.1 peer), Chromium (renders the SVG charts in a test), prlimit/setpriv (limit
# tests), tcpdump (the packet capture the reported bytes are checked against), and the clients
# users point at the built-in servers: ab, wrk, h2load, curl.
missing=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
command -v chromium >/dev/null || missing+=(chromium)
command -v setpriv >/dev/null || missing+=(util-linux)
command -v ab >/dev/null || missing+=(apache2-utils)
command -v wrk >/dev/null || missing+=(wrk)
command -v h2load >/dev/null || missing+=(nghttp2-client)
command -v curl >/dev/null || missing+=(curl)
# mosquitto (Debian's 2.0.11) and its mosquitto_sub: the MQTT peer (tests/peer_mosquitto.rs).
command -v mosquitto >/dev/null || [ -x /usr/sbin/mosquitto ] || missing+=(mosquitto)
command -v mosquitto_sub >/dev/null || missing+=(mosquitto-clients)
command -v tcpdump >/dev/null || [ -x /usr/bin/tcpdump ] || missing+=(tcpdump)
# tmux: the terminal tests/tui.rs drives `bench --tui` in (send-keys, capture-pane).
command -v tmux >/dev/null || missing+=(tmux)
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# `go install …@v1.3.0` asks the proxy for nsq's version list, which it refuses here; downloading
# the exact module version and building inside the module cache needs no list.
if [ ! -x "$here/bin/nsqd" ]; then
    mkdir -p "$here/bin"
    go mod download "github.com/nsqio/nsq@$NSQ_VERSION"
    (cd "$(go env GOMODCACHE)/github.com/nsqio/nsq@$NSQ_VERSION" &&
        GOFLAGS=-mod=mod go build -o "$here/bin/nsqd" ./apps/nsqd)
fi

# h2spec, the HTTP/2 conformance suite (v2.2.1, its last release), against `serve h2`.
H2SPEC_VERSION="${H2SPEC_VERSION:-v2.2.1+incompatible}"
if [ ! -x "$here/bin/h2spec" ]; then
    mkdir -p "$here/bin"
    GOBIN="$here/bin" go install "github.com/summerwind/h2spec/cmd/h2spec@$H2SPEC_VERSION"
fi

# quic-go's HTTP/3 server (tools/h3-go, built from the Go module proxy): a second HTTP/3 peer.
if [ ! -x "$here/bin/h3-go" ] || [ "$here/h3-go/main.go" -nt "$here/bin/h3-go" ]; then
    mkdir -p "$here/bin"
    (cd "$here/h3-go" && go build -o "$here/bin/h3-go" .)
fi

if ! python3 -c 'import websockets' 2>/dev/null; then
    python3 -m pip install -q --disable-pip-version-check websockets
fi
# HdrHistogram's own Python reader, to check the histograms wirebench writes (tests/merge.rs).
if ! python3 -c 'import hdrh' 2>/dev/null; then
    python3 -m pip install -q --disable-pip-version-check hdrhistogram
fi
# A JSON Schema validator, to check every command's JSON against docs/schema (tests/schema.rs).
if ! python3 -c 'import jsonschema' 2>/dev/null; then
    python3 -m pip install -q --disable-pip-version-check jsonschema
fi
# Prometheus's own Python parser, to check what --metrics-listen serves (tests/cli.rs).
if ! python3 -c 'import prometheus_client' 2>/dev/null; then
    python3 -m pip install -q --disable-pip-version-check prometheus_client
fi
# A real gRPC server and client (tools/grpc-echo-*.py; tests/peer_grpc.rs, tests/peer_clients.rs).
# An HTTP/3 server over QUIC no one here wrote (tools/h3-server.py; tests/h3.rs, tests/capture.rs).
if ! python3 -c 'import aioquic' 2>/dev/null; then
    python3 -m pip install -q --disable-pip-version-check aioquic
fi
# A strict HTTP/2 peer (tools/h2-strict.py: Python's h2, its header validation on).
if ! python3 -c 'import h2' 2>/dev/null; then
    python3 -m pip install -q --disable-pip-version-check h2
fi
if ! python3 -c 'import grpc' 2>/dev/null; then
    python3 -m pip install -q --disable-pip-version-check grpcio
fi
for module in socketio aiohttp; do
    if ! python3 -c "import $module" 2>/dev/null; then
        python3 -m pip install -q --disable-pip-version-check python-socketio aiohttp
        break
    fi
done
if [ ! -d "$here/sio-peers/node_modules/socket.io-v2" ]; then
    (cd "$here/sio-peers" && npm ci --silent --no-audit --no-fund)
fi

echo "peers: $(nginx -v 2>&1), nsqd $("$here/bin/nsqd" --version 2>&1 | head -1), websockets $(python3 -c 'import websockets; print(websockets.__version__)')," \
    "python-socketio $(python3 -c 'import importlib.metadata as m; print(m.version("python-socketio"))')," \
    "socket.io $(node -p 'require("'"$here"'/sio-peers/node_modules/socket.io/package.json").version')" \
    "and $(node -p 'require("'"$here"'/sio-peers/node_modules/socket.io-v2/package.json").version')," \
    "grpcio $(python3 -c 'import grpc; print(grpc.__version__)'), $(/usr/sbin/mosquitto -h 2>&1 | head -1), aioquic $(python3 -c 'import aioquic; print(aioquic.__version__)'), $(h2load --version | head -1)"
