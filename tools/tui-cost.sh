#!/usr/bin/env bash
# What `bench --tui` costs the generator: client CPU per operation with the view and without,
# side by side, ROUNDS alternating rounds (default 3) of SECS seconds (default 5), closed loop
# (64 connections) and paced (20,000/s), `serve http` on CPU 1 and the client on CPU 0. Each run
# happens in a tmux pane (the view needs a terminal; the plain run gets one too, so both print
# to a terminal). Prints each run's cpu/op and the medians' ratio per load.
#
#     cargo build --release && tools/tui-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${BIN:-target/release/wirebench}"
rounds="${ROUNDS:-3}"
secs="${SECS:-5}"
dir="$(mktemp -d)"
port=$((20000 + RANDOM % 20000))
"$bin" serve http --listen "127.0.0.1:$port" --cores 1 >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; tmux kill-session -t wbcost 2>/dev/null || true' EXIT
sleep 1
run() { # name args…
    local name=$1
    shift
    tmux kill-session -t wbcost 2>/dev/null || true
    tmux new-session -d -s wbcost -x 120 -y 40 "$bin bench http://127.0.0.1:$port/ --cores 0 -d ${secs}s --json $dir/$name.json $*; touch $dir/$name.done"
    for _ in $(seq 1 $((secs * 10 + 100))); do [ -e "$dir/$name.done" ] && break; sleep 0.1; done
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(f'{sys.argv[2]:<24} {r[\"ops_per_sec\"]:>10.0f} ops/s  {r[\"cpu_us_per_op\"]:.3f} us/op')" "$dir/$name.json" "$name"
}
for load in "closed:-c 64" "paced:-c 64 --rate 20000"; do
    label=${load%%:*}
    args=${load#*:}
    for i in $(seq 1 "$rounds"); do
        run "$label-plain-$i" $args
        run "$label-tui-$i" $args --tui
    done
    python3 - "$dir" "$label" "$rounds" <<'PY'
import json, statistics, sys
d, label, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
cpu = lambda kind: statistics.median(json.load(open(f"{d}/{label}-{kind}-{i}.json"))["cpu_us_per_op"] for i in range(1, n + 1))
print(f"{label}: median cpu/op with --tui {cpu('tui'):.3f} us, without {cpu('plain'):.3f} us: {cpu('tui') / cpu('plain'):.3f}x")
PY
done
