#!/usr/bin/env bash
# The allocator's trade, side by side: this tree built with mimalloc (the default) and with
# glibc's allocator (`--no-default-features`), each binary loading its own built-in server (server on
# CPU 1, client on CPU 0, 64 connections × 10 deep, DURATION seconds, ROUNDS alternating
# rounds): client CPU µs per request (GNU time) for h3://, h2:// over TLS, h2c:// and http://,
# medians; then memory per idle WebSocket connection at N (tools/conn-memory.sh, both binaries).
#
#     tools/alloc-compare.sh            (ROUNDS=3 DURATION=5 N=18000; MEMORY=0 skips the memory part)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
cargo build --release >/dev/null 2>&1
cargo build --release --no-default-features --target-dir target/glibc >/dev/null 2>&1
declare -A bin=([glibc]=target/glibc/release/wirebench [mimalloc]=target/release/wirebench)
# shellcheck source=tools/scratch.sh
. tools/scratch.sh
for r in $(seq "$ROUNDS"); do
    for proto in h3 h2 h2c http; do
        for alloc in glibc mimalloc; do
            b=${bin[$alloc]} port=$(free_port) tls=()
            case $proto in
                h3) kind=(h3) tls=(--insecure) ;;
                h2) kind=(h2 --tls) tls=(--insecure) ;;
                h2c) kind=(h2) ;;
                http) kind=(http) ;;
            esac
            out="$work/serve-$r-$proto-$alloc.out"
            taskset -c 1 "$b" serve "${kind[@]}" --listen "127.0.0.1:$port" --cores 1 -d 100000 >"$out" 2>&1 &
            pids+=($!)
            wait_listening "$out"
            rm -f "$work/r.json"
            /usr/bin/time -f "%U %S" -o "$work/time" taskset -c 0 "$b" bench "$proto://127.0.0.1:$port/" "${tls[@]}" \
                -c 64 --depth 10 -d "${DURATION}s" --cores 0 --json "$work/r.json" >/dev/null 2>&1 || true
            kill "${pids[-1]}" 2>/dev/null; wait "${pids[-1]}" 2>/dev/null || true
            python3 - "$proto" "$alloc" "$work" >>"$work/rows" <<'PY'
import json, sys
proto, alloc, work = sys.argv[1:4]
ops = json.load(open(f"{work}/r.json"))["ops"]
user, system = map(float, open(f"{work}/time").read().split()[-2:])
print(proto, alloc, ops, (user + system) / ops * 1e6)
PY
        done
    done
done
python3 - "$work/rows" "$ROUNDS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print(f"client CPU µs per request, median of {sys.argv[2]} rounds (each binary on its own server)")
print("| protocol | glibc | mimalloc | mimalloc / glibc |")
print("|---|---:|---:|---:|")
for proto in ["h3", "h2", "h2c", "http"]:
    med = {a: statistics.median(float(r[3]) for r in rows if r[0] == proto and r[1] == a) for a in ["glibc", "mimalloc"]}
    print(f"| {proto} | {med['glibc']:.3f} | {med['mimalloc']:.3f} | {med['mimalloc'] / med['glibc']:.2f} |")
PY
if [ "${MEMORY:-1}" != 0 ]; then
    BINS="${bin[glibc]} ${bin[mimalloc]}" N="${N:-18000}" ROUNDS=2 tools/conn-memory.sh
fi
