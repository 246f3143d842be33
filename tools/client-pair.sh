#!/usr/bin/env bash
# Two HTTP/1.1 clients measured at the same time, not one after the other: wirebench's
# (`bench http://`, the uring engine) and the floor for any io_uring client
# (benches/minimal_loop.rs, `timed`: it stamps each request and records its latency, as every
# load generator must) both on the client CPU, each with its own CONNS connections to the same
# server on the server CPU (nginx with one worker, as tools/vs-peers.sh part 1, or
# SERVER=minimal: benches/minimal_server.rs), in the same DURATION s window; each client's CPU
# per request (user and system) from GNU time. tools/server-pair.sh's reasoning, for clients:
# rounds one after the other move by ±8-16 % on this shared VM (vs-peers part 1, 2026-12-07),
# two clients sharing a window share what the machine does in it. Each sees half the server
# and half its CPU: it is not a client alone, but the ratio is paired by construction.
# FLOOR=bare uses the loop without timing; WB_ARGS adds arguments to wirebench's (`--gather 0`); BASE=path/to/an/older/wirebench puts that build's
# client in the place of the floor.
#
# Usage: tools/client-pair.sh   (ROUNDS=7 DURATION=5 CONNS=64 SERVER=nginx FLOOR=timed WB_ARGS=)
set -euo pipefail
ROUNDS=${ROUNDS:-7}
DURATION=${DURATION:-5}
CONNS=${CONNS:-64}
SERVER=${SERVER:-nginx}
FLOOR=${FLOOR:-timed}
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
# shellcheck source=tools/scratch.sh
. "$here/scratch.sh"
cpus=$(nproc)
CLIENT_CPU=0
SERVER_CPU=$((cpus - 1))
cd "$root"
cargo build --release -q
WB="$root/target/release/wirebench"
LOOP=$(bench_binary minimal_loop)
other=${BASE:+base}
other=${other:-minimal loop}

port=$(free_port)
case $SERVER in
    nginx) start_nginx "$port" ;;
    minimal)
        taskset -c "$SERVER_CPU" "$(bench_binary minimal_server)" "127.0.0.1:$port" 100000 >/dev/null &
        pids+=($!)
        wait_port "$port"
        ;;
    *) echo "SERVER is nginx or minimal, not $SERVER" >&2; exit 2 ;;
esac
timed=""
[ "$FLOOR" = timed ] && timed=timed

for round in $(seq "$ROUNDS"); do
    wb=(taskset -c "$CLIENT_CPU" "$WB" bench "http://127.0.0.1:$port/" -c "$CONNS" -d "${DURATION}s"
        --cores "$CLIENT_CPU" --engine uring --json "$work/wb.json" ${WB_ARGS:-})
    if [ -n "${BASE:-}" ]; then
        floor=(taskset -c "$CLIENT_CPU" "$BASE" bench "http://127.0.0.1:$port/" -c "$CONNS" -d "${DURATION}s"
            --cores "$CLIENT_CPU" --engine uring --json "$work/floor.json")
    else
        floor=(taskset -c "$CLIENT_CPU" "$LOOP" "127.0.0.1:$port" "$CONNS" "$DURATION" $timed)
    fi
    # The two in the opposite order each round: neither always starts first.
    if ((round % 2)); then first=wb; else first=floor; fi
    for who in $first $([ $first = wb ] && echo floor || echo wb); do
        if [ "$who" = wb ]; then
            /usr/bin/time -f "%U %S" -o "$work/wb.time" "${wb[@]}" >/dev/null 2>&1 &
        else
            /usr/bin/time -f "%U %S" -o "$work/floor.time" "${floor[@]}" >"$work/floor.out" 2>&1 &
        fi
        pids+=($!)
    done
    wait "${pids[@]: -2}" || true
    pids=("${pids[@]:0:${#pids[@]}-2}")
    n1=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['ops'])" "$work/wb.json")
    if [ -n "${BASE:-}" ]; then
        n2=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['ops'])" "$work/floor.json")
    else
        n2=$(sed -n 's/^requests \([0-9]*\) in.*/\1/p' "$work/floor.out")
    fi
    echo "$n1 $(tail -1 "$work/wb.time") $n2 $(tail -1 "$work/floor.time")" >>"$work/rows"
done
echo "$(date -u +%F) $(git log -1 --format=%h), clients both on CPU $CLIENT_CPU at once against $SERVER on CPU $SERVER_CPU," \
    "$CONNS connections each, $ROUNDS rounds of $DURATION s; floor: ${BASE:-minimal loop ($FLOOR)}"
python3 - "$work/rows" "$other" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
def per_req(n, u, s):
    return 1e6 * u / n, 1e6 * s / n
a = [per_req(*r[:3]) for r in rows]
b = [per_req(*r[3:]) for r in rows]
print(f"  requests a round: wirebench {statistics.median(r[0] for r in rows):,.0f}, {sys.argv[2]} {statistics.median(r[3] for r in rows):,.0f}")
for name, v in (("wirebench", a), (sys.argv[2], b)):
    print(f"  {name:<12} µs/request: total {statistics.median(u + s for u, s in v):6.3f}, user {statistics.median(u for u, _ in v):5.3f}, system {statistics.median(s for _, s in v):5.3f}")
r = sorted((x[0] + x[1]) / (y[0] + y[1]) for x, y in zip(a, b))
print(f"  wirebench ÷ {sys.argv[2]}, round by round: median {statistics.median(r):.3f} (range {r[0]:.3f}–{r[-1]:.3f})")
PY
