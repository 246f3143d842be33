#!/usr/bin/env bash
# The socket.io study's three load machines, rebuilt with `--start-at`, `watch` and `merge`:
# three generator processes (standing for the three hosts; pass HOSTS=ns to put each in a
# network namespace of its own instead — needs root) each drive CLIENTS socket.io clients
# emitting every INTERVAL ms at one server, all measuring the same window; `watch` samples the
# server over that window; `merge` gives a row per host and the exact total, with the server's
# CPU % and memory % beside it.
#
# Server: SERVER=node4 (socket.io 4), node2 (socket.io 2, Engine.IO 3), python
# (python-socketio) or builtin (`serve sio`),
# pinned to the last CPU; the generators share CPU 0 (on a 2-CPU machine the "hosts" are
# processes on one core: it measures the merge, not three machines' capacity).
#
# Usage: tools/fleet-study.sh   (SERVER=node4 CLIENTS=300 INTERVAL=100 SECONDS_PER_RUN=10)
set -euo pipefail
SERVER=${SERVER:-node4}
CLIENTS=${CLIENTS:-300}
INTERVAL=${INTERVAL:-100}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
SERVER_CPU=$(($(nproc) - 1))
(cd "$root" && cargo build -q --release)
WB="$root/target/release/wirebench"
# shellcheck source=tools/sio-servers.sh
. "$here/sio-servers.sh"
port=$(free_port)
start_server "$SERVER" "$port"
at=$(( $(date +%s) + 5 ))
"$WB" watch --pid "$server_pid" -d "${SECONDS_PER_RUN}s" --start-at "$at" --json "$work/server.json" >/dev/null &
for host in 1 2 3; do
    "$WB" bench "sio://127.0.0.1:$port/" --eio "$eio" -c "$CLIENTS" --interval "${INTERVAL}ms" \
        -d "${SECONDS_PER_RUN}s" --start-at "$at" --cores 0 --label "host-$host" \
        --json "$work/host-$host.json" >/dev/null 2>"$work/err-$host" &
done
fail=0
for job in $(jobs -p); do
    [ "$job" = "$server_pid" ] && continue
    wait "$job" || fail=1
done
[ "$fail" = 0 ] || { cat "$work"/err-* >&2; exit 1; }
echo "fleet study: $SERVER server on CPU $SERVER_CPU; 3 generators × $CLIENTS clients, one event every ${INTERVAL} ms each, ${SECONDS_PER_RUN} s from a common --start-at; generators on CPU 0"
"$WB" merge "$work"/host-*.json --server "$work/server.json"
