#!/usr/bin/env bash
# The generator's memory per idle WebSocket connection: `bench ws://… -c N --interval 30s`
# against `serve ws` on its default settings (uring, CPU 1), the client on CPU 0, its VmRSS read 3 s before it ends, minus the same
# run with one connection; each binary given (BINS, default this tree's release build; e.g.
# BINS="target/release/wirebench /tmp/base/wirebench" for a change side by side), ROUNDS
# alternating rounds (default 2). Also prints each run's handshakes that timed out or failed.
# Beside that average, the marginal cost: the slope between N/2 and N connections, which leaves
# out what a core holds whatever its connections (its provided-buffer ring: 1,024 buffers of
# 4 KiB once a core has 512 connections or more, 233 octets a connection at 18,000 and 4 at
# 1,000,000).
#
#     cargo build --release && N=18000 tools/conn-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bins=(${BINS:-target/release/wirebench})
n="${N:-18000}"
rounds="${ROUNDS:-2}"
dir="$(mktemp -d)"
port=$((20000 + RANDOM % 20000))
server_bin=${bins[0]}
taskset -c 1 "$server_bin" serve ws --listen "127.0.0.1:$port" --cores 1 -d 3000s >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$dir"' EXIT
sleep 1
# One run of `bin` with `c` connections: "rss_kib errors".
run() {
    local bin=$1 c=$2
    taskset -c 0 "$bin" bench "ws://127.0.0.1:$port/" -c "$c" --interval 30s -d 10s --cores 0 --json "$dir/r.json" >/dev/null 2>&1 &
    local pid=$!
    # VmRSS every 0.5 s; the one 3 s before the run ended is inside its 10 s window, which
    # opens once every connection is set up (since the default paces openings beyond 1,024 a
    # core, 18,000 take ~10 s to open: a read at a fixed 7 s missed the later ones).
    local samples=()
    while kill -0 "$pid" 2>/dev/null; do
        samples+=("$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null)")
        sleep 0.5
    done
    wait $pid || true
    local n=${#samples[@]} rss
    rss=${samples[$((n > 7 ? n - 7 : 0))]}
    local errors; errors=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sum(r["connection_errors"].values()))' "$dir/r.json")
    echo "$rss $errors"
}
for r in $(seq "$rounds"); do
    for bin in "${bins[@]}"; do
        read -r one _ < <(run "$bin" 1)
        read -r half _ < <(run "$bin" $((n / 2)))
        read -r many errors < <(run "$bin" "$n")
        python3 -c "import sys; one,half,many,n=map(int,sys.argv[1:5]); print(f'round {sys.argv[6]} {sys.argv[5]}: {many} KiB at {n} connections, {half} KiB at {n//2}, {one} KiB at 1: {(many-one)/n:.2f} KiB per connection, {(many-half)/(n-n//2):.2f} KiB marginal; {sys.argv[7]} connection errors')" \
            "$one" "$half" "$many" "$n" "$bin" "$r" "$errors"
    done
done
