#!/usr/bin/env bash
# Two HTTP/1.1 servers measured at the same time, not one after the other: `serve http` (the
# uring engine) and the floor for any io_uring server (benches/minimal_server.rs) both on the
# server CPU, each loaded by its own `wirebench bench --rate RATE` on the client CPU, in the
# same DURATION s window; each server's CPU per request (user and system) from /proc. On a
# shared machine the cost of the same binary moves by ±8 % from one 5 s round to the next
# (tools/vs-peers.sh part 2b, 2026-12-07): rounds one after the other cannot resolve a 3 %
# goal, but two servers sharing the window share whatever the machine does in it, and their
# ratio is paired by construction. What it measures differs from a server alone: each sees
# RATE requests a second while the CPU carries twice that, and the two take turns on it (the
# switches cost both). BASE=path/to/an/older/wirebench puts that build's `serve http` in the
# place of the floor.
#
# Usage: tools/server-pair.sh   (ROUNDS=7 DURATION=5 RATE=40000 CONNS=64)
set -euo pipefail
ROUNDS=${ROUNDS:-7}
DURATION=${DURATION:-5}
RATE=${RATE:-40000}
CONNS=${CONNS:-64}
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
# shellcheck source=tools/scratch.sh
. "$here/scratch.sh"
cd "$root"
build_wirebench
MINIMAL=$(bench_binary minimal_server)
other=${BASE:+base}
other=${other:-minimal}
# user and system seconds of process $1
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{print $14 / hz, $15 / hz}' "/proc/$1/stat"; }

for round in $(seq "$ROUNDS"); do
    p1=$(free_port); p2=$(free_port)
    taskset -c "$SERVER_CPU" "$WB" serve http --listen "127.0.0.1:$p1" --cores "$SERVER_CPU" -d 100000 >/dev/null &
    s1=$!; pids+=("$s1")
    if [ -n "${BASE:-}" ]; then
        taskset -c "$SERVER_CPU" "$BASE" serve http --listen "127.0.0.1:$p2" --cores "$SERVER_CPU" -d 100000 >/dev/null &
    else
        taskset -c "$SERVER_CPU" "$MINIMAL" "127.0.0.1:$p2" >/dev/null &
    fi
    s2=$!; pids+=("$s2")
    wait_port "$p1"; wait_port "$p2"
    read -r u1 y1 < <(cpu_of "$s1"); read -r u2 y2 < <(cpu_of "$s2")
    # The two clients in the opposite order each round: neither always starts first.
    clients=()
    for p in $( ((round % 2)) && echo "$p1 $p2" || echo "$p2 $p1"); do
        taskset -c "$CLIENT_CPU" "$WB" bench "http://127.0.0.1:$p/" -c "$CONNS" --rate "$RATE" -d "${DURATION}s" \
            --cores "$CLIENT_CPU" --json "$work/$p.json" >/dev/null 2>&1 &
        clients+=($!)
    done
    wait "${clients[@]}" || true
    read -r v1 z1 < <(cpu_of "$s1"); read -r v2 z2 < <(cpu_of "$s2")
    kill "$s1" "$s2"; wait "$s1" "$s2" 2>/dev/null || true
    pids=()
    echo "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['ops'])" "$work/$p1.json") $u1 $y1 $v1 $z1" \
         "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['ops'])" "$work/$p2.json") $u2 $y2 $v2 $z2" >>"$work/rows"
done
echo "$(date -u +%F) $(git log -1 --format=%h), servers both on CPU $SERVER_CPU at once, each loaded at $RATE/s by wirebench on CPU $CLIENT_CPU, $CONNS connections each, $ROUNDS rounds of $DURATION s"
python3 - "$work/rows" "$other" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
def per_req(n, u0, s0, u1, s1):
    return 1e6 * (u1 - u0) / n, 1e6 * (s1 - s0) / n
a = [per_req(*r[:5]) for r in rows]
b = [per_req(*r[5:]) for r in rows]
for name, v in (("serve http", a), (sys.argv[2], b)):
    print(f"  {name:<11} µs/request: total {statistics.median(u + s for u, s in v):6.2f}, user {statistics.median(u for u, _ in v):5.2f}, system {statistics.median(s for _, s in v):5.2f}")
r = sorted((x[0] + x[1]) / (y[0] + y[1]) for x, y in zip(a, b))
print(f"  serve http ÷ {sys.argv[2]}, round by round: median {statistics.median(r):.3f} (range {r[0]:.3f}–{r[-1]:.3f})")
PY
