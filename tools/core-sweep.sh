#!/usr/bin/env bash
# The core-scaling study on a bigger machine, in one step: built-in servers and nginx at 1, 2, 4, …
# server cores, the generator on the other half of the CPUs. Writes JSON, SVG and the tables to
# OUT (default ./sweep-results). Bounded: every step runs DURATION seconds.
#
# Usage: tools/core-sweep.sh
#   DURATION=5 CONNS=1024 OUT=./sweep-results
#   PARTS="http nginx"          any of: http (serve http), nginx (nginx HTTP/1.1), h2 (serve h2),
#                               nginx-h2c (nginx h2c), h3 (serve h3), tcp (serve tcp, the floor),
#                               client (the generator scaling on its half against serve http
#                               holding the whole server half)
#   STREAMS=10 H2_CONNS=256     HTTP/2 parts: connections × streams
#   H3_CONNS=64                 HTTP/3: connections (× STREAMS)
#   WB=path/to/wirebench        a binary built elsewhere (default: cargo build --release here)
#   NGINX=path/to/nginx         (default: the one on PATH or /usr/sbin/nginx)
set -euo pipefail
DURATION=${DURATION:-5}
case $DURATION in *[!0-9]* | '') echo "DURATION is whole seconds: '$DURATION'" >&2; exit 2 ;; esac
CONNS=${CONNS:-1024}
STREAMS=${STREAMS:-10}
H2_CONNS=${H2_CONNS:-256}
H3_CONNS=${H3_CONNS:-64}
OUT=${OUT:-./sweep-results}
PARTS=${PARTS:-http nginx}
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
# shellcheck source=tools/scratch.sh
. "$here/scratch.sh" # free_port, and a scratch directory removed at exit (nginx's)
mkdir -p "$OUT"
if [ -z "${WB:-}" ]; then
    (cd "$root" && cargo build -q --release)
    WB="$root/target/release/wirebench"
fi
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
cpus=$(nproc)
half=$((cpus / 2))
[ "$half" -ge 1 ] || { echo "needs at least 2 CPUs" >&2; exit 2; }
server_set="0-$((half - 1))"
client_set="$half-$((cpus - 1))"
counts=1; n=2; while [ "$n" -le "$half" ]; do counts="$counts,$n"; n=$((n * 2)); done
steps=(--server-cores "$counts" --cpu-set "$server_set" --client-cores "$client_set" -d "${DURATION}s")

# A built-in server's sweep: KIND LOAD-ARGS...
builtin_sweep() {
    local kind=$1; shift
    "$WB" sweep --serve "$kind" "${steps[@]}" "$@" --json "$OUT/builtin-$kind.json" --svg "$OUT/builtin-$kind.svg"
}

# nginx for one step: HTTP/1.1 or h2c on a free port, its workers set by sweep's {cores}.
nginx_sweep() { # NAME LISTEN-EXTRA SCHEME LOAD-ARGS...
    local name=$1 extra=$2 scheme=$3; shift 3
    if [ ! -x "$NGINX" ]; then echo "($name: no nginx at $NGINX, skipped)"; return; fi
    local port dir="$work/$name"
    port=$(free_port) || return
    mkdir -p "$dir" || return
    cat >"$dir/nginx.conf" <<CONF
daemon off;
user root;
pid $dir/nginx.pid;
error_log $dir/error.log;
worker_rlimit_nofile 100000;
events { worker_connections 20000; }
http { access_log off; keepalive_requests 1000000000; default_type text/plain;
  http2_max_concurrent_streams 1000; client_body_temp_path $dir/body;
  server { listen 127.0.0.1:$port reuseport $extra; location / { return 200 "Hello World"; } } }
CONF
    echo
    "$WB" sweep "$scheme://127.0.0.1:$port/" --server-cmd "exec $NGINX -c $dir/nginx.conf -p $dir -g 'worker_processes {cores};'" \
        "${steps[@]}" "$@" --json "$OUT/$name.json" --svg "$OUT/$name.svg"
}

# The generator's own scaling: serve http on every server CPU for the whole sweep, the generator
# at 1, 2, 4, … cores of its half (a step whose server CPU is near 100 % measured the server).
client_sweep() {
    local port srv n_steps rc=0
    port=$(free_port) || return
    n_steps=$(echo "$counts" | tr ',' '\n' | wc -l)
    "$WB" serve http --listen "127.0.0.1:$port" --cores "$server_set" -d "$((n_steps * (DURATION + 5) + 10))s" &
    srv=$!
    sleep 1
    "$WB" sweep "http://127.0.0.1:$port/" --cores "$counts" --cpu-set "$client_set" -d "${DURATION}s" \
        -c "$CONNS" --watch-pid "$srv" --json "$OUT/client-http.json" --svg "$OUT/client-http.svg" || rc=$?
    kill "$srv" 2>/dev/null
    wait "$srv" 2>/dev/null || true
    return "$rc"
}

# One part of the study.
part() {
    case $1 in
        http | tcp) builtin_sweep "$1" -c "$CONNS" ;;
        nginx) nginx_sweep nginx "" http -c "$CONNS" ;;
        h2) builtin_sweep h2 -c "$H2_CONNS" --streams "$STREAMS" ;;
        nginx-h2c) nginx_sweep nginx-h2c http2 h2c -c "$H2_CONNS" --streams "$STREAMS" ;;
        h3) builtin_sweep h3 -c "$H3_CONNS" --streams "$STREAMS" ;;
        client) client_sweep ;;
        *) echo "unknown part '$1' (http nginx h2 nginx-h2c h3 tcp client)" >&2; return 2 ;;
    esac
}

{
    echo "machine: $cpus CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), Linux $(uname -r)"
    echo "servers on CPUs $server_set (counts $counts), generator on CPUs $client_set, ${DURATION}s per step; parts: $PARTS"
    for p in $PARTS; do
        echo
        part "$p" || echo "(part $p failed: exit $?; the next part goes on)"
    done
} 2>&1 | tee "$OUT/sweep.txt"
