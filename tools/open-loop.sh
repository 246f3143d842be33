#!/usr/bin/env bash
# Does the open loop keep its schedule, and what does pacing cost? The built-in HTTP server on
# the last CPU, the generator (`uring` engine unless ENGINE is set) on CPU 0, 64 connections;
# rows alternating over ROUNDS rounds of DURATION seconds, medians printed:
#   closed/saturated  a closed loop as fast as it goes;
#   closed/2 conns    a closed loop of 2 connections: about 20,000 ops/s here, the same
#                     offered load as the first paced row (like against like);
#   rate 20000, 50000 the open loop (--rate): schedule lag p50/p99 (actual − intended send of
#                     operations due on a free connection), operations that came due on a busy
#                     one, corrected and uncorrected p99.
# A round in which the hypervisor took 1 % or more of CPU 0 (steal, /proc/stat) is set aside:
# on a shared VM those pauses, not the generator, make the lag; the table says how many rounds
# were kept of how many run (at most 3 × ROUNDS).
# CPU per operation is the engine thread's own (CLOCK_THREAD_CPUTIME_ID over the window).
#
# Part two ("cpu"): CPU per paced request at 20,000/s, like with like: every client's whole
# process (user + sys from GNU time, start-up included) over the requests it completed, pinned
# to CPU 0, 64 connections, against the same server, rows alternating over ROUNDS rounds:
# wirebench at its default (awake for sends due within 30 us), --spin 0, --slack 1ms (sends
# batched on a 1 ms tick, as wrk2's timer), --slack 1500us, 2ms, 5ms; vegeta (64 workers, as
# 64 connections; without a cap on them it stalled near 480 requests/s here; built from the Go
# module proxy if missing) and wrk2 (WRK2=path, or `wrk2` on PATH; skipped if neither). Each
# row says how late its sends went: wirebench its schedule lag p99; wrk2 its latency p99 from
# when each request was due less its p99 from when it was sent (`--latency -U`); vegeta does
# not say.
#
# Usage: tools/open-loop.sh   (ROUNDS=3 DURATION=5 ENGINE=uring PARTS="lag cpu")
set -euo pipefail
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
ENGINE=${ENGINE:-uring}
PARTS=" ${PARTS:-lag cpu} "
root="$(cd "$(dirname "$0")/.." && pwd)"
cpus=$(nproc)
SERVER_CPU=$((cpus - 1))
(cd "$root" && cargo build -q --release)
wb="$root/target/release/wirebench"
port=$((20000 + RANDOM % 20000))
"$wb" serve http --listen "127.0.0.1:$port" --cores "$SERVER_CPU" -d 3600s >/dev/null &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
sleep 0.5
if [[ $PARTS == *" lag "* ]]; then
out=$(mktemp -d)
rows=("closed/saturated|-c 64" "closed/2 conns|-c 2" "rate 20000|-c 64 --rate 20000" "rate 50000|-c 64 --rate 50000")
round=0
for attempt in $(seq $((3 * ROUNDS))); do
    for row in "${rows[@]}"; do
        name=${row%%|*}
        # shellcheck disable=SC2086
        "$wb" bench "http://127.0.0.1:$port/" ${row#*|} -d "${DURATION}s" --cores 0 --engine "$ENGINE" \
            --json "$out/$(echo "$name" | tr ' /' '__').$attempt.json" >/dev/null
    done
    quiet=$(python3 -c "import json,glob,sys; print(all((json.load(open(f))['per_core'][0].get('steal_pct') or 0) < 1 for f in glob.glob(sys.argv[1] + '/*.' + sys.argv[2] + '.json')))" "$out" "$attempt")
    if [ "$quiet" = True ]; then round=$((round + 1)); else rm -f "$out"/*."$attempt".json; fi
    [ "$round" -ge "$ROUNDS" ] && break
done
echo "kept $round quiet rounds of $attempt run"
[ "$round" -gt 0 ] || { echo "no quiet round: the host is too busy to measure lag now"; exit 1; }
python3 - "$out" "$ENGINE" "$round" "$DURATION" "${rows[@]}" <<'PY'
import json, os, statistics, sys
out, engine, rounds, duration, rows = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
print(f"generator: {engine} engine on CPU 0; serve http on the last CPU; median of {rounds} quiet alternating rounds of {duration}s")
print(f"{'row':<18}{'ops/s':>10}{'cpu us/op':>11}{'busy %':>8}{'lag p50 us':>12}{'lag p99 us':>12}{'busy due':>10}{'p99 us':>10}{'uncorr p99':>12}{'steal %':>9}")
fig = {}
for row in rows:
    name = row.split("|")[0]
    stem = name.replace(' ', '_').replace('/', '_')
    runs = [json.load(open(os.path.join(out, f))) for f in sorted(os.listdir(out)) if f.startswith(stem + ".")]
    med = lambda f: statistics.median(f(v) for v in runs)
    lag = lambda q: med(lambda v: (v.get("schedule_lag_us") or {}).get(q, float("nan")))
    unc = med(lambda v: (v.get("latency_uncorrected_us") or {}).get("p99", float("nan")))
    busy = med(lambda v: 100 * statistics.mean(c["cpu_util"] for c in v["per_core"]))
    steal = max(c.get("steal_pct") or 0 for v in runs for c in v["per_core"])
    due_busy = med(lambda v: (v.get("schedule_lag_us") or {}).get("due_while_busy", 0))
    fig[name] = med(lambda v: v["cpu_us_per_op"])
    print(f"{name:<18}{med(lambda v: v['ops_per_sec']):>10.0f}{fig[name]:>11.2f}{busy:>8.0f}{lag('p50'):>12.1f}{lag('p99'):>12.1f}{due_busy:>10.0f}{med(lambda v: v['latency_us']['p99']):>10.0f}{unc:>12.0f}{steal:>9.1f}")
print(f"cpu/op at 20,000 ops/s: paced / closed-loop saturated = {fig['rate 20000'] / fig['closed/saturated']:.2f}x, "
      f"paced / closed-loop at the same rate = {fig['rate 20000'] / fig['closed/2 conns']:.2f}x")
PY
rm -rf "$out"
fi

# --- part two: CPU per paced request beside wrk2 and vegeta --------------------------------
[[ $PARTS == *" cpu "* ]] || exit 0
RATE=20000
vegeta=$(command -v vegeta || echo "$HOME/go/bin/vegeta")
[ -x "$vegeta" ] || GOFLAGS=-mod=mod go install github.com/tsenart/vegeta/v12@v12.12.0
wrk2=${WRK2:-$(command -v wrk2 || true)}
out=$(mktemp -d)
url="http://127.0.0.1:$port/"
echo "GET $url" > "$out/targets"
clients=("wirebench default" "wirebench --spin 0" "wirebench --slack 1ms" "wirebench --slack 1500us" "wirebench --slack 2ms" "wirebench --slack 5ms" vegeta)
[ -n "$wrk2" ] && [ -x "$wrk2" ] && clients+=(wrk2)
for round in $(seq "$ROUNDS"); do
    for client in "${clients[@]}"; do
        stem=$(echo "$client" | tr ' /' '__').$round
        case $client in
            wirebench*)
                args=${client#wirebench}
                args=${args/default/}
                # shellcheck disable=SC2086
                /usr/bin/time -f "%U %S" -o "$out/$stem.time" taskset -c 0 "$wb" bench "$url" -c 64 \
                    --rate $RATE -d "${DURATION}s" --cores 0 $args \
                    --json "$out/$stem.json" >/dev/null
                python3 -c "import json,sys; v=json.load(open(sys.argv[1])); print(v['ops'], (v.get('schedule_lag_us') or {}).get('p99', 'nan'))" \
                    "$out/$stem.json" > "$out/$stem.count" ;;
            vegeta)
                /usr/bin/time -f "%U %S" -o "$out/$stem.time" taskset -c 0 "$vegeta" attack -rate=$RATE \
                    -duration="${DURATION}s" -workers 64 -max-workers 64 -targets="$out/targets" > "$out/$stem.bin"
                "$vegeta" report -type=json < "$out/$stem.bin" \
                    | python3 -c "import json,sys; v=json.load(sys.stdin); print(int(v['requests'] * v['success']), 'nan')" > "$out/$stem.count" ;;
            wrk2)
                # Its own lateness: its latency p99 from when each request was due (corrected)
                # less its p99 from when it was sent (-U, uncorrected) — a difference of
                # quantiles, near the p99 of how late it sent (it prints no lateness itself).
                /usr/bin/time -f "%U %S" -o "$out/$stem.time" taskset -c 0 "$wrk2" -t1 -c64 \
                    -d "${DURATION}s" -R$RATE --latency -U "$url" > "$out/$stem.out"
                python3 - "$out/$stem.out" > "$out/$stem.count" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
unit = {"us": 1, "ms": 1e3, "s": 1e6}
p99 = [float(v) * unit[u] for v, u in re.findall(r"^\s*99\.000%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)]
n = re.search(r"(\d+) requests in", text).group(1)
print(n, p99[0] - p99[1] if len(p99) == 2 else "nan")
PY
                ;;
        esac
    done
done
python3 - "$out" "$ROUNDS" "$DURATION" "${clients[@]}" <<'PY'
import os, statistics, sys
out, rounds, duration, clients = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
print(f"\nCPU per request at 20,000 requests/s: each client's process (user + sys) / requests completed;")
print(f"client on CPU 0, serve http on the last CPU, 64 connections, median of {rounds} alternating rounds of {duration}s")
print(f"{'client':<26}{'requests':>10}{'cpu us/req':>12}{'user':>8}{'sys':>8}{'lag p99 us':>12}")
print("(wrk2's lag p99: its corrected latency p99 less its uncorrected one)")
fig = {}
for client in clients:
    stem = client.replace(' ', '_').replace('/', '_')
    rows = []
    for r in range(1, rounds + 1):
        u, s = map(float, open(os.path.join(out, f"{stem}.{r}.time")).read().split()[-2:])
        n, lag = open(os.path.join(out, f"{stem}.{r}.count")).read().split()
        rows.append((int(n), u * 1e6 / int(n), s * 1e6 / int(n), float(lag)))
    med = lambda i: statistics.median(row[i] for row in rows)
    fig[client] = med(1) + med(2)
    print(f"{client:<26}{med(0):>10.0f}{fig[client]:>12.2f}{med(1):>8.2f}{med(2):>8.2f}{med(3):>12.0f}")
if "wrk2" in fig:
    for client in [c for c in clients if c.startswith("wirebench")]:
        print(f"{client} / wrk2 = {fig[client] / fig['wrk2']:.2f}x")
PY
rm -rf "$out"
