#!/usr/bin/env bash
# The core-scaling study on a bigger machine, in one step: the built-in HTTP server and nginx at
# 1, 2, 4, … server cores, the generator on the other half of the CPUs. Writes JSON, SVG and the
# tables to OUT (default ./sweep-results). Bounded: every step runs DURATION seconds.
#
# Usage: tools/core-sweep.sh          (DURATION=5 CONNS=1024 OUT=./sweep-results)
set -euo pipefail
DURATION=${DURATION:-5}
CONNS=${CONNS:-1024}
OUT=${OUT:-./sweep-results}
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
mkdir -p "$OUT"
(cd "$root" && cargo build -q --release)
WB="$root/target/release/wirebench"
cpus=$(nproc)
half=$((cpus / 2))
[ "$half" -ge 1 ] || { echo "needs at least 2 CPUs" >&2; exit 2; }
server_set="0-$((half - 1))"
client_set="$half-$((cpus - 1))"
counts=1; n=2; while [ "$n" -le "$half" ]; do counts="$counts,$n"; n=$((n * 2)); done
{
    echo "machine: $cpus CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), Linux $(uname -r)"
    echo "servers on CPUs $server_set (counts $counts), generator on CPUs $client_set, $CONNS connections, ${DURATION}s per step"
    echo
    "$WB" sweep --serve http --server-cores "$counts" --cpu-set "$server_set" --client-cores "$client_set" \
        -c "$CONNS" -d "${DURATION}s" --json "$OUT/builtin-http.json" --svg "$OUT/builtin-http.svg"
    nginx=$(command -v nginx || echo /usr/sbin/nginx)
    if [ -x "$nginx" ]; then
        port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
        dir=$(mktemp -d)
        cat >"$dir/nginx.conf" <<CONF
daemon off;
user root;
pid $dir/nginx.pid;
error_log $dir/error.log;
worker_rlimit_nofile 100000;
events { worker_connections 20000; }
http { access_log off; keepalive_requests 1000000000; default_type text/plain;
  server { listen 127.0.0.1:$port reuseport; location / { return 200 "Hello World"; } } }
CONF
        echo
        "$WB" sweep "http://127.0.0.1:$port/" --server-cmd "exec $nginx -c $dir/nginx.conf -p $dir -g 'worker_processes {cores};'" \
            --server-cores "$counts" --cpu-set "$server_set" --client-cores "$client_set" \
            -c "$CONNS" -d "${DURATION}s" --json "$OUT/nginx.json" --svg "$OUT/nginx.svg"
    fi
} 2>&1 | tee "$OUT/sweep.txt"
