#!/usr/bin/env bash
# The socket.io study, rebuilt with wirebench: N clients each emit an event every INTERVAL ms
# and time the server's acknowledgement; per row the clients, the interval, the events answered,
# min/avg/max latency in ms, and the server's CPU % (mean over the run) and memory % (peak RSS
# of MemTotal), sampled from /proc by `--watch-pid`, and the server's CPU µs per request, to compare
# servers at the same offered load. The study ran three load machines against
# socket.io 1.x/2.x; here one pinned generator (`--interval`: each connection sends every
# INTERVAL at its own offset in it) drives each server in turn.
#
# Servers: Node's socket.io 2 (Engine.IO 3, what the study ran), socket.io 4, python-socketio
# (aiohttp) and `wirebench serve sio`, each a process of its own pinned to the last CPU; the
# generator on the first. Every run stops by itself.
#
# Usage: tools/sio-study.sh     (CLIENTS="100 1000 2000" INTERVALS="1000 100" SECONDS_PER_ROW=10
#                                SERVERS="node2 node4 python builtin"; needs tools/install-peers.sh)
set -euo pipefail
CLIENTS=${CLIENTS:-"100 1000 2000"}
INTERVALS=${INTERVALS:-"1000 100"}
SECONDS_PER_ROW=${SECONDS_PER_ROW:-10}
SERVERS=${SERVERS:-"node2 node4 python builtin"}
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
cpus=$(nproc)
CLIENT_CPU=0
SERVER_CPU=$((cpus - 1))
(cd "$root" && cargo build -q --release)
WB="$root/target/release/wirebench"

# shellcheck source=tools/sio-servers.sh
. "$here/sio-servers.sh"

mem_total_kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
echo "socket.io study: server on CPU $SERVER_CPU, generator (wirebench uring engine) on CPU $CLIENT_CPU, ${SECONDS_PER_ROW}s per row, 400-byte event acknowledged"
echo "machine: $cpus CPUs, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), MemTotal $((mem_total_kib / 1024)) MiB, $(uname -r)"
echo
printf '%-8s %8s %9s %9s %8s %8s %8s %8s %9s %11s %6s %7s\n' server clients interval requests 'max ms' 'min ms' 'avg ms' 'p99 ms' 'cpu %' 'cpu us/req' 'mem %' errors
for server in $SERVERS; do
    for clients in $CLIENTS; do
        for interval in $INTERVALS; do
            port=$(free_port)
            start_server "$server" "$port"
            "$WB" bench "sio://127.0.0.1:$port/" --eio "$eio" -c "$clients" --interval "${interval}ms" \
                -d "${SECONDS_PER_ROW}s" --cores "$CLIENT_CPU" --watch-pid "$server_pid" \
                --json "$work/row.json" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
            kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=
            python3 - "$work/row.json" "$server" "$clients" "$interval" "$mem_total_kib" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
server, clients, interval, mem_total = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
lat, watch = r["latency_us"], r["server_watch"]
ms = lambda us: "-" if us is None else f"{us / 1000:.2f}"
def errors(r):
    # Failed operations and failed connections, by class: `12 (timeout 10, closed 2)`.
    classes = {}
    for group in (r["failed"], r["connection_errors"]):
        for k, v in group.items():
            if k != "total" and v:
                classes[k] = classes.get(k, 0) + v
    total = r["failed"]["total"] + r["connection_errors"]["total"]
    return str(total) + ("" if not classes else " (" + ", ".join(f"{k} {v}" for k, v in classes.items()) + ")")
print(f"{server:<8} {clients:>8} {interval:>7}ms {r['ops']:>9} {ms(lat['max']):>8} {ms(lat['min']):>8} "
      f"{ms(lat['mean']):>8} {ms(lat['p99']):>8} {watch['cpu_pct']['mean']:>8.1f}% "
      f"{watch['cpu_pct']['mean'] / 100 * r['duration_s'] * 1e6 / max(r['ops'], 1):>11.1f} "
      f"{100 * watch['rss_kib']['max'] / mem_total:>5.2f}% {errors(r):>7}")
PY
        done
    done
done
echo
echo "requests: events acknowledged in the run (each client starts its schedule once joined); latency from when each event was due (--interval);"
echo "errors: failed events and failed connections, by class"
echo "cpu %: the server process's CPU time over wall time, mean of 250 ms samples (100% = one CPU);"
echo "cpu us/req: that CPU over the run's measured window per request (compare servers at the same clients and interval); mem %: peak RSS / MemTotal"
