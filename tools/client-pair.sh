#!/usr/bin/env bash
# Two clients measured at the same time, not one after the other: both on the client CPU, each
# with its own CONNS connections, in the same DURATION s window; each client's CPU per request
# (user and system) from GNU time (their sum is exact; the kernel splits it between user and
# system by sampling). tools/server-pair.sh's reasoning, for clients: rounds one after the
# other move by ±8-16 % on this shared VM (vs-peers part 1, 2026-12-07), two clients sharing a
# window share what the machine does in it. Each sees half its server and half the CPU: it is
# not a client alone, but the ratio is paired by construction.
#
# The two (ONE, by default wirebench, and AGAINST, by default the timed floor), by name:
# - wirebench: `bench http://` (the uring engine); base:SIDE: any wirebench side from the build
#   BASE=path/to/wirebench names (base alone: base:wirebench);
# - timed: the floor for any io_uring client, benches/minimal_loop.rs timing each request as
#   every load generator must; bare: the same loop timing nothing;
# - wrk, ab, h2load (--h1): the peers, each with one thread;
#   these load one HTTP/1.1 server on the server CPU: nginx with one worker (as vs-peers part
#   1) or SERVER=minimal (benches/minimal_server.rs);
# - h3: `bench h3://` on `serve h3`; h2tls: `bench h2://` on `serve h2 --tls`; minimal-h3 and
#   minimal-h2tls: their floors (benches/minimal_h3.rs, minimal_h2.rs … hpack tls), on the same
#   servers; each with STREAMS streams a connection (vs-peers part h3's comparison);
# - h2c: `bench h2c://` with STREAMS streams a connection on nginx's h2c (one worker, on the
#   server CPU beside the HTTP/1.1 one); pipelined: `bench http://` pipelining STREAMS deep on
#   the HTTP/1.1 server (vs-peers part h2's pair: HTTP/2's user time beside HTTP/1.1's).
# Besides the totals' ratio, the user times' ratio round by round. The kernel splits a process's
# time between user and system by its ticks, coarsely; SAMPLE=1 takes both from `perf record`'s
# samples of each client instead (cpu-clock at 20 kHz, a sample in the kernel or not), exact to
# a percent or so in a 5 s round, for a few percent of CPU more on each side. ALONE=1 runs the
# two one after the other in each round instead (alternating which goes first): two clients
# sharing a CPU also share its caches, and a client whose time goes to cache misses costs more
# beside another than alone (HTTP/2's user time beside HTTP/1.1's: 1.46× sharing, 3.3× alone,
# 2026-12-08) — compare alone too before believing a user-time ratio.
# WB_ARGS adds arguments to this tree's wirebench sides, not BASE's (`--gather 0`).
#
# Usage: tools/client-pair.sh   (ROUNDS=7 DURATION=5 CONNS=64 STREAMS=10 SERVER=nginx ONE=wirebench
#                                AGAINST=timed WB_ARGS= SAMPLE= ALONE=)
set -euo pipefail
ROUNDS=${ROUNDS:-7}
DURATION=${DURATION:-5}
CONNS=${CONNS:-64}
STREAMS=${STREAMS:-10}
SERVER=${SERVER:-nginx}
ONE=${ONE:-wirebench}
AGAINST=${AGAINST:-timed}
[ "$ONE" = base ] && ONE=base:wirebench
[ "$AGAINST" = base ] && AGAINST=base:wirebench
HZ=20000 # SAMPLE=1's sampling rate
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
# shellcheck source=tools/scratch.sh
. "$here/scratch.sh"
cd "$root"
build_wirebench

for side in "$ONE" "$AGAINST"; do
    case $side in
        base:wirebench | base:h3 | base:h2tls | base:h2c | base:pipelined)
            [ -x "${BASE:-}" ] || { echo "$side wants BASE=path/to/wirebench" >&2; exit 2; } ;;
        base:*) echo "$side: base: takes a wirebench side" >&2; exit 2 ;;
    esac
    case ${side#base:} in
        wirebench | timed | bare | wrk | ab | h2load | h3 | h2tls | minimal-h3 | minimal-h2tls | h2c | pipelined) ;;
        *) echo "no client named $side (see the script's head)" >&2; exit 2 ;;
    esac
done
sides=" ${ONE#base:} ${AGAINST#base:} "
# The servers the two need, each started once on the server CPU.
if [[ $sides =~ \ (wirebench|timed|bare|wrk|ab|h2load|pipelined)\  ]]; then
    http=$(free_port)
    case $SERVER in
        nginx) start_nginx "$http" ;;
        minimal)
            taskset -c "$SERVER_CPU" "$(bench_binary minimal_server)" "127.0.0.1:$http" 100000 >/dev/null &
            pids+=($!)
            wait_port "$http"
            ;;
        *) echo "SERVER is nginx or minimal, not $SERVER" >&2; exit 2 ;;
    esac
fi
if [[ $sides =~ \ h2c\  ]]; then
    h2c=$(free_port)
    start_nginx "$h2c" h2c
fi
if [[ $sides =~ \ (h3|minimal-h3)\  ]]; then
    quic=$(free_port)
    taskset -c "$SERVER_CPU" "$WB" serve h3 --listen "127.0.0.1:$quic" --cores "$SERVER_CPU" -d 100000 >"$work/h3.out" &
    pids+=($!)
    wait_listening "$work/h3.out"
fi
if [[ $sides =~ \ (h2tls|minimal-h2tls)\  ]]; then
    tls=$(free_port)
    taskset -c "$SERVER_CPU" "$WB" serve h2 --tls --listen "127.0.0.1:$tls" --cores "$SERVER_CPU" -d 100000 >/dev/null &
    pids+=($!)
    wait_port "$tls"
fi

# The floors' binaries, found (built if need be) before any round: not between two starts.
case $sides in *" timed "* | *" bare "*) LOOP=$(bench_binary minimal_loop) ;; esac
case $sides in *" minimal-h3 "*) MINIMAL_H3=$(bench_binary minimal_h3) ;; esac
case $sides in *" minimal-h2tls "*) MINIMAL_H2=$(bench_binary minimal_h2) ;; esac

# The command line of client $1, writing what it reports to $2 (wirebench: its JSON).
client_cmd() {
    local url="http://127.0.0.1:${http:-}/" bench=(bench -c "$CONNS" -d "${DURATION}s" --cores "$CLIENT_CPU" --engine uring --json "$2")
    local WB=$WB side=$1 args=${WB_ARGS:-}
    # base:SIDE: that side from the other build, without WB_ARGS.
    [ "$side" = "${side#base:}" ] || { WB=$BASE side=${side#base:} args=; }
    case $side in
        wirebench) echo "$WB" "${bench[@]}" "$url" $args ;;
        h3) echo "$WB" "${bench[@]}" --insecure --depth "$STREAMS" "h3://127.0.0.1:$quic/" $args ;;
        h2tls) echo "$WB" "${bench[@]}" --insecure --depth "$STREAMS" "h2://127.0.0.1:$tls/" $args ;;
        h2c) echo "$WB" "${bench[@]}" --depth "$STREAMS" "h2c://127.0.0.1:$h2c/" $args ;;
        pipelined) echo "$WB" "${bench[@]}" --depth "$STREAMS" "$url" $args ;;
        timed | bare) echo "$LOOP" "127.0.0.1:$http" "$CONNS" "$DURATION" "${side/bare/}" ;;
        minimal-h3) echo "$MINIMAL_H3" "127.0.0.1:$quic" "$CONNS" "$STREAMS" "$DURATION" ;;
        minimal-h2tls) echo "$MINIMAL_H2" "127.0.0.1:$tls" "$CONNS" "$STREAMS" "$DURATION" hpack tls ;;
        wrk) echo wrk -t1 "-c$CONNS" "-d${DURATION}s" "$url" ;;
        ab) echo ab -q -k -c "$CONNS" -t "$DURATION" -n 100000000 "$url" ;;
        h2load) echo h2load --h1 -t1 -c "$CONNS" -D "$DURATION" "$url" ;;
    esac
}

# The requests client $1 completed, from what it reported in $2 (its output, or its JSON).
count() {
    case ${1#base:} in
        wirebench | h3 | h2tls | h2c | pipelined) python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['ops'])" "$2.json" ;;
        wrk) sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' "$2" ;;
        ab) sed -n 's/^Complete requests: *\([0-9]*\).*/\1/p' "$2" ;;
        h2load) sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p' "$2" ;;
        *) sed -n 's/^requests \([0-9]*\) in.*/\1/p' "$2" ;;
    esac
}

for round in $(seq "$ROUNDS"); do
    # The two in the opposite order each round: neither always starts first.
    order=(1 2)
    ((round % 2)) || order=(2 1)
    for k in "${order[@]}"; do
        name=$([ "$k" = 1 ] && echo "$ONE" || echo "$AGAINST")
        # Timed by GNU time, or sampled by perf (its own CPU time not the client's).
        timer=(/usr/bin/time -f "%U %S" -o "$work/$k.time") sampler=()
        [ -z "${SAMPLE:-}" ] || { timer=() sampler=(perf record -q -F "$HZ" -e cpu-clock -o "$work/$k.perf"); }
        # shellcheck disable=SC2046
        "${timer[@]}" taskset -c "$CLIENT_CPU" "${sampler[@]}" $(client_cmd "$name" "$work/$k.out.json") \
            >"$work/$k.out" 2>&1 &
        pids+=($!)
        if [ -n "${ALONE:-}" ]; then
            wait "${pids[-1]}" || true
            unset 'pids[-1]'
        fi
    done
    if [ -z "${ALONE:-}" ]; then
        wait "${pids[@]: -2}" || true
        pids=("${pids[@]:0:${#pids[@]}-2}")
    fi
    if [ -n "${SAMPLE:-}" ]; then
        # User and system seconds: the samples outside the kernel and in it.
        for k in 1 2; do
            perf report -i "$work/$k.perf" --sort dso --stdio -n 2>/dev/null |
                awk -v hz="$HZ" '/^ +[0-9]/ { if ($3 ~ /kernel/) s += $2; else u += $2 } END { print u / hz, s / hz }' >"$work/$k.time"
        done
    fi
    echo "$(count "$ONE" "$work/1.out") $(tail -1 "$work/1.time") $(count "$AGAINST" "$work/2.out") $(tail -1 "$work/2.time")" >>"$work/rows"
done
echo "$(date -u +%F) $(git log -1 --format=%h), clients on CPU $CLIENT_CPU$([ -n "${ALONE:-}" ] || echo " both at once"), servers on CPU $SERVER_CPU" \
    "(${http:+$SERVER }${h2c:+nginx h2c }${quic:+serve h3 }${tls:+serve h2 --tls}), $CONNS connections each, $ROUNDS rounds of $DURATION s" \
    "${SAMPLE:+, times from perf samples at $HZ Hz}${ALONE:+, each alone in turn}"
python3 - "$work/rows" "$ONE" "$AGAINST" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
one, other = sys.argv[2], sys.argv[3]
def per_req(n, u, s):
    return 1e6 * u / n, 1e6 * s / n
a = [per_req(*r[:3]) for r in rows]
b = [per_req(*r[3:]) for r in rows]
print(f"  requests a round: {one} {statistics.median(r[0] for r in rows):,.0f}, {other} {statistics.median(r[3] for r in rows):,.0f}")
for name, v in ((one, a), (other, b)):
    print(f"  {name:<13} µs/request: total {statistics.median(u + s for u, s in v):6.3f}, user {statistics.median(u for u, _ in v):5.3f}, system {statistics.median(s for _, s in v):5.3f}")
r = sorted((x[0] + x[1]) / (y[0] + y[1]) for x, y in zip(a, b))
print(f"  {one} ÷ {other}, round by round: median {statistics.median(r):.3f} (range {r[0]:.3f}–{r[-1]:.3f})")
u = sorted(x[0] / y[0] for x, y in zip(a, b) if y[0] > 0)
if u:
    print(f"  {one} ÷ {other}, user time only: median {statistics.median(u):.3f} (range {u[0]:.3f}–{u[-1]:.3f})")
PY
