#!/usr/bin/env bash
# The floor against Google's neper (tcp_rr, tcp_crr, udp_rr), side by side on one machine.
#
# neper is no package: build it by hand from its source (`make tcp_rr tcp_crr udp_rr` needs
# only a C compiler) and give its folder as NEPER=/path (nothing here fetches or builds it).
# neper's servers answer any client on their data port (12867) once started with the sizes
# (`-Q`, `-R`; its control connection carries none), so wirebench's `tcp://` and `udp://`
# clients run against them with `--no-setup` (no 8-byte set-up: neper's server was told the
# sizes). neper's client needs neper's control port, so it runs against its own server only.
#
# Per round, tools alternating, ROUNDS rounds of DURATION s, clients on CPU 0 and servers on
# the last CPU, FLOWS connections, 41-byte requests and 50-byte responses (the issue's set-up):
#   rr:  neper tcp_rr's client, and wirebench's tcp:// client, each against neper's tcp_rr
#        server; then wirebench's client against `serve tcp` — transactions/s, client CPU
#        µs per transaction (user + sys, GNU time, over the process's life), server CPU µs per
#        transaction (/proc of the server, over the load's window).
#   crr: the same with a connection per transaction (tcp_crr; wirebench --no-keepalive
#        --close-reset: neper's client closes with a reset, leaving no TIME_WAIT).
#   udp: the same over UDP (udp_rr; wirebench's udp://, and `serve udp`).
# Each run is checked: no failed transaction, 41 bytes out and 50 back per transaction.
# Medians per tool. Usage: NEPER=/tmp/neper tools/vs-neper.sh   (ROUNDS=3 DURATION=5 FLOWS=64
# MODES="rr crr udp")
set -euo pipefail
NEPER=${NEPER:?give NEPER=/path/to/a/neper/build (with tcp_rr and tcp_crr)}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
FLOWS=${FLOWS:-64}
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
cpus=$(nproc)
CLIENT_CPU=0
SERVER_CPU=$((cpus - 1))
WB="$root/target/release/wirebench"
[[ -x $WB ]] || (cd "$root" && cargo build --release -q)
for b in tcp_rr tcp_crr udp_rr; do [[ -x $NEPER/$b ]] || { echo "no $NEPER/$b: build neper first" >&2; exit 2; }; done
out=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$out"; }
trap cleanup EXIT

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }   # utime + stime, in clock ticks
hz=$(getconf CLK_TCK)

# A server on the server CPU: its pid.
start_server() {
  case $1 in
    neper-rr) taskset -c "$SERVER_CPU" "$NEPER/tcp_rr" -H 127.0.0.1 -Q 41 -R 50 --nolog >/dev/null 2>&1 & ;;
    neper-crr) taskset -c "$SERVER_CPU" "$NEPER/tcp_crr" -H 127.0.0.1 -Q 41 -R 50 --nolog >/dev/null 2>&1 & ;;
    neper-udp) taskset -c "$SERVER_CPU" "$NEPER/udp_rr" -H 127.0.0.1 -Q 41 -R 50 --nolog >/dev/null 2>&1 & ;;
    serve-tcp) taskset -c "$SERVER_CPU" "$WB" serve tcp --listen 127.0.0.1:12867 --cores "$SERVER_CPU" -d 120s >/dev/null 2>&1 & ;;
    serve-udp) taskset -c "$SERVER_CPU" "$WB" serve udp --listen 127.0.0.1:12867 --cores "$SERVER_CPU" -d 120s >/dev/null 2>&1 & ;;
  esac
  local pid=$!
  pids+=("$pid")
  case $1 in
    *udp) sleep 0.5 ;;
    *) for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/12867) 2>/dev/null && break; sleep 0.1; done ;;
  esac
  echo "$pid"
}

# One client run (mode rr, crr or udp): prints "tps client_us server_us".
run() {
  local server=$1 client=$2 mode=$3
  local spid; spid=$(start_server "$server")
  local before; before=$(ticks "$spid")
  local tps cpu
  if [[ $client == neper ]]; then
    local bin=tcp_rr; [[ $mode == crr ]] && bin=tcp_crr; [[ $mode == udp ]] && bin=udp_rr
    /usr/bin/time -f "%U %S" -o "$out/time" taskset -c "$CLIENT_CPU" "$NEPER/$bin" -c -H 127.0.0.1 \
      -F "$FLOWS" -Q 41 -R 50 -l "$DURATION" --nolog >"$out/client" 2>&1 || true
    tps=$(awk -F= '/^throughput=/{print $2}' "$out/client")
  else
    local scheme=tcp extra=()
    # neper's client closes with a reset (no TIME_WAIT): like for like.
    [[ $mode == crr ]] && extra+=(--no-keepalive --close-reset)
    [[ $mode == udp ]] && scheme=udp
    [[ $server == neper-* ]] && extra+=(--no-setup)
    /usr/bin/time -f "%U %S" -o "$out/time" taskset -c "$CLIENT_CPU" "$WB" bench "$scheme://127.0.0.1:12867" \
      --size 41 --response-size 50 -c "$FLOWS" -d "${DURATION}s" --cores "$CLIENT_CPU" "${extra[@]}" \
      --json "$out/r.json" >/dev/null 2>&1 || true
    tps=$(python3 - "$out/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
bad = r["failed"]["total"] + r["connection_errors"]["total"]
per = (r["bytes"]["tx_per_op"], r["bytes"]["rx_per_op"])
if bad or per != (41, 50):
    sys.exit(f"wirebench's run was not clean: {bad} failures, {per} bytes per transaction")
print(r["ops_per_sec"])
PY
)
  fi
  local after; after=$(ticks "$spid")
  kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true
  cpu=$(awk '{print $1 + $2}' "$out/time")
  python3 - "$tps" "$cpu" "$before" "$after" "$hz" "$DURATION" <<'PY'
import sys
tps, cpu, before, after, hz, d = map(float, sys.argv[1:])
n = tps * d
print(f"{tps:.0f} {1e6 * cpu / n:.2f} {1e6 * (after - before) / hz / n:.2f}")
PY
}

echo "neper: $(git -C "$NEPER" log -1 --format='%h %cs' 2>/dev/null || echo "$NEPER"); wirebench: $(git -C "$root" log -1 --format='%h')"
echo "$(date -u +%F), $cpus CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), clients on CPU $CLIENT_CPU, servers on CPU $SERVER_CPU, $FLOWS flows, 41/50 bytes, $ROUNDS rounds of $DURATION s"
for mode in ${MODES:-rr crr udp}; do
  : >"$out/$mode"
  for round in $(seq "$ROUNDS"); do
    native=tcp; [[ $mode == udp ]] && native=udp
    for pair in "neper neper-$mode" "wirebench neper-$mode" "wirebench serve-$native"; do
      set -- $pair
      echo "$1 $2 $(run "$2" "$1" "$mode")" >>"$out/$mode"
    done
  done
  echo
  echo "$mode (medians of $ROUNDS; neper's tcp_rr, tcp_crr, udp_rr):"
  printf '  %-10s %-10s %12s %16s %16s\n' client server "trans/s" "client µs/trans" "server µs/trans"
  python3 - "$out/$mode" <<'PY'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    c, s, tps, cu, su = line.split()
    rows.setdefault((c, s), []).append((float(tps), float(cu), float(su)))
med = {k: [statistics.median(x[i] for x in v) for i in range(3)] for k, v in rows.items()}
for (c, s), (tps, cu, su) in med.items():
    print(f"  {c:<10} {s:<10} {tps:>12.0f} {cu:>16.2f} {su:>16.2f}")
n = [v for (c, s), v in med.items() if c == "neper"][0]
w = [v for (c, s), v in med.items() if c == "wirebench" and s.startswith("neper")][0]
sv = [v for (c, s), v in med.items() if s.startswith("serve")][0]
print(f"  client CPU/trans, wirebench ÷ neper (same neper server): {w[1] / n[1]:.2f}x")
print(f"  server CPU/trans, wirebench's ÷ neper's (same wirebench client): {sv[2] / w[2]:.2f}x; trans/s {sv[0] / w[0]:.2f}x")
PY
done
