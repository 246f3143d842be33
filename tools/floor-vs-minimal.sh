#!/usr/bin/env bash
# The floor's client against the least a client can do: `bench tcp://` (41 … here the minimal
# loop's own sizes) against `serve tcp`, beside benches/minimal_loop.rs (a bare io_uring
# keep-alive loop: a fixed `GET /`, one multishot receive a socket, no codec, no statistics)
# against `serve http` — the same bytes each way (a 35-byte request, a 50-byte response), the
# same server engine on the server CPU, the same connections; what is left between them is the
# connection machine's and the recorder's work. Client CPU µs per request from GNU time (user +
# system over the process's life), ROUNDS alternating rounds of DURATION s, medians.
#
# Usage: tools/floor-vs-minimal.sh   (ROUNDS=3 DURATION=5 CONNS=64)
set -euo pipefail
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
CONNS=${CONNS:-64}
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
# shellcheck source=tools/scratch.sh
. "$here/scratch.sh" # a scratch directory and its cleanup, bench_binary
cd "$root"
build_wirebench
MINIMAL=$(bench_binary minimal_loop)
out=$work
taskset -c "$SERVER_CPU" "$WB" serve http --listen 127.0.0.1:18080 --cores "$SERVER_CPU" -d 600s >/dev/null &
pids+=($!)
taskset -c "$SERVER_CPU" "$WB" serve tcp --listen 127.0.0.1:18081 --cores "$SERVER_CPU" -d 600s >/dev/null &
pids+=($!)
sleep 1
for round in $(seq "$ROUNDS"); do
  /usr/bin/time -f "%U %S" -o "$out/t" taskset -c "$CLIENT_CPU" "$MINIMAL" 127.0.0.1:18080 "$CONNS" "$DURATION" >"$out/m"
  n=$(sed -n 's/^requests \([0-9]*\) .*/\1/p' "$out/m")
  echo "minimal $n $(cat "$out/t")" >>"$out/rows"
  /usr/bin/time -f "%U %S" -o "$out/t" taskset -c "$CLIENT_CPU" "$WB" bench tcp://127.0.0.1:18081 --size 35 \
    --response-size 50 -c "$CONNS" -d "${DURATION}s" --cores "$CLIENT_CPU" --json "$out/r.json" >/dev/null
  n=$(python3 -c "import json,sys; r=json.load(open('$out/r.json')); assert r['failed']['total'] == 0; print(r['sent'])")
  echo "tcp $n $(cat "$out/t")" >>"$out/rows"
done
echo "$(date -u +%F) $(git log -1 --format=%h), client on CPU $CLIENT_CPU, servers on CPU $SERVER_CPU (uring), $CONNS connections, $ROUNDS rounds of $DURATION s"
python3 - "$out/rows" <<'PY'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    tool, n, user, sys_ = line.split()
    rows.setdefault(tool, []).append((int(n), 1e6 * (float(user) + float(sys_)) / int(n), 1e6 * float(user) / int(n)))
med = {t: [statistics.median(x[i] for x in v) for i in range(3)] for t, v in rows.items()}
for t, (n, us, user) in med.items():
    print(f"  {t:<8} requests {n:>9.0f}  client µs/request {us:6.2f} (user {user:5.2f})")
print(f"  tcp:// ÷ minimal loop: {med['tcp'][1] / med['minimal'][1]:.2f}x client CPU per request")
PY
