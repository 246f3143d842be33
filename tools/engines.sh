#!/usr/bin/env bash
# The engines side by side: each client engine loads the same server (nginx, one worker, on the
# last CPU) from the first CPU, alternating over ROUNDS rounds; then each server engine answers
# the same client. Prints medians: requests/s, generator CPU µs per request (the engine
# threads' own accounting), syscalls per request (strace -c -f, a separate short run).
#
# Usage: tools/engines.sh   (ROUNDS=5 DURATION=4 CONNS=64)
set -euo pipefail
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-4}
CONNS=${CONNS:-64}
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
(cd "$root" && cargo build -q --release)
WB="$root/target/release/wirebench"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
SERVER_CPU=$(($(nproc) - 1))
# shellcheck source=tools/scratch.sh
. "$here/scratch.sh"

p=$(free_port)
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
daemon off;
user root;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 1000000000; default_type text/plain;
  server { listen 127.0.0.1:$p; location / { return 200 "Hello World"; } } }
CONF
taskset -c "$SERVER_CPU" "$NGINX" -c "$work/nginx.conf" -p "$work" & pids+=($!)
wait_port "$p"

bench_json() { "$WB" bench "$1" -c "$CONNS" -d "${DURATION}s" --cores 0 --engine "$2" --json - ; }
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), Linux $(uname -r); generator on CPU 0, server on CPU $SERVER_CPU, $CONNS connections, $ROUNDS alternating rounds of ${DURATION}s"
echo
echo "| client engine (vs nginx) | requests/s | CPU µs/req | syscalls/req |"
echo "|---|---:|---:|---:|"
: >"$work/r"
for r in $(seq "$ROUNDS"); do
    for e in glommio tokio-uring uring; do
        bench_json "http://127.0.0.1:$p/" "$e" | python3 -c "import json,sys; v=json.load(sys.stdin); print('$e', v['ops_per_sec'], v['cpu_us_per_op'])" >>"$work/r"
    done
done
for e in glommio tokio-uring uring; do
    strace -c -f -o "$work/st" "$WB" bench "http://127.0.0.1:$p/" -c "$CONNS" -d 2s --cores 0 --engine "$e" --json - >"$work/sj"
    calls=$(awk '$NF=="total" {print $(NF-2)}' "$work/st")
    python3 - "$work/r" "$e" "$calls" "$work/sj" <<'PY'
import json, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.split()[0] == sys.argv[2]]
ops = json.load(open(sys.argv[4]))["ops"]
print(f"| {sys.argv[2]} | {statistics.median(float(r[1]) for r in rows):,.0f} | {statistics.median(float(r[2]) for r in rows):.2f} | {int(sys.argv[3]) / max(ops, 1):.2f} |")
PY
done
kill "${pids[@]}"; wait 2>/dev/null || true; pids=()

echo
echo "| server engine (serve http) | requests/s (uring client) | server CPU µs/req |"
echo "|---|---:|---:|"
: >"$work/s"
for r in $(seq "$ROUNDS"); do
    for e in glommio tokio-uring; do
        sp=$(free_port)
        "$WB" serve http --listen "127.0.0.1:$sp" --cores "$SERVER_CPU" --engine "$e" -d $((DURATION + 3)) >"$work/serve.out" & spid=$!
        wait_port "$sp"
        rps=$(bench_json "http://127.0.0.1:$sp/" uring | python3 -c "import json,sys; print(json.load(sys.stdin)['ops_per_sec'])")
        wait "$spid" || true
        # The tally line: "served N requests ..."; the server's CPU comes from its per-core line.
        python3 - "$work/serve.out" "$e" "$rps" >>"$work/s" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
reqs = int(re.search(r"served (\d+) requests", text).group(1))
cpu = float(re.search(r"cpu time ([0-9.]+)s", text).group(1)) if "cpu time" in text else float("nan")
print(sys.argv[2], sys.argv[3], cpu * 1e6 / max(reqs, 1))
PY
    done
done
for e in glommio tokio-uring; do
    python3 - "$work/s" "$e" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.split()[0] == sys.argv[2]]
print(f"| {sys.argv[2]} | {statistics.median(float(r[1]) for r in rows):,.0f} | {statistics.median(float(r[2]) for r in rows):.2f} |")
PY
done
