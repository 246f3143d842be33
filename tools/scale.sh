#!/usr/bin/env bash
# Many mostly idle WebSocket connections on one box, push-style (one small message per
# connection every INTERVAL): how long the connections take to open, what each costs in memory
# (the generator's, the server's, and the kernel's from /proc/net/sockstat and slabinfo), and
# CPU per message — at each count in COUNTS.
#
# A process here may hold at most `ulimit -Hn` open files (20,000 on the project's machines,
# and only a privileged process can raise it), so each count is spread over several generator
# and server processes of at most PER_PROC connections each (servers accept up to their file
# limit: SO_REUSEPORT spreads connections by hash, not evenly): the servers share one port
# (SO_REUSEPORT), each generator has its own 200 source addresses (--bind 127.X.Y.2-127.X.Y.201:
# one address reaches one port from about 28,000 ephemeral ports, and the kernel finds a free
# one faster the fewer it already holds), all start their measured window at the
# same --start-at, and `wirebench merge` adds their results. Servers are pinned to the last CPU,
# generators to the first. Where the box stops a count short, the script says how far it got
# and what stopped it.
#
# Usage: tools/scale.sh            (COUNTS="10000 100000 1000000" PER_PROC=19000 INTERVAL=30s
#                                   DURATION=60s RATE=20000 connections/s in all)
set -uo pipefail
COUNTS=${COUNTS:-10000 100000 1000000}
PER_PROC=${PER_PROC:-18000}
INTERVAL=${INTERVAL:-30s}
DURATION=${DURATION:-60s} # in seconds: 60s
RATE=${RATE:-20000}
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
(cd "$root" && cargo build -q --release)
WB="$root/target/release/wirebench"
cpus=$(nproc)
SERVER_CPU=$((cpus - 1))
CLIENT_CPU=0
# shellcheck source=tools/scratch.sh
. "$here/scratch.sh"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
# TCP sockets in use and TCP memory (pages) from sockstat; slab bytes of the socket caches.
sockstat() { awk '/^TCP:/ {for (i = 2; i < NF; i += 2) if ($i == "inuse" || $i == "mem") printf "%s ", $(i + 1)}' /proc/net/sockstat; }
slab_bytes() { awk '$1 ~ /^(TCP|tcp_bind_bucket|sock_inode_cache|dentry|filp|skbuff_head_cache)$/ {s += $2 * $4} END {printf "%d\n", s}' /proc/slabinfo 2>/dev/null || echo 0; }

echo "## wirebench scale — $(date -u +%Y-%m-%d)"
echo
echo "machine: $cpus CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), Linux $(uname -r); open files per process $(ulimit -Hn); servers (serve ws, uring) on CPU $SERVER_CPU, generators (uring) on CPU $CLIENT_CPU; one ${INTERVAL} push per connection, ${DURATION} measured, $PER_PROC connections per process at most"
echo
echo "| connections | processes | opened | set up in | generator KiB/conn | server KiB/conn | kernel KiB/conn | gen CPU µs/msg | server CPU µs/msg | messages | errors | what stopped it |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
for count in $COUNTS; do
    procs=$(((count + PER_PROC - 1) / PER_PROC))
    port=$(free_port)
    read -r tcp0 mem0 < <(sockstat)
    slab0=$(slab_bytes)
    servers=()
    for s in $(seq "$procs"); do
        "$WB" serve ws --listen "127.0.0.1:$port" --cores "$SERVER_CPU" --max-conns $(( $(ulimit -Hn) - 100 )) \
            --idle-timeout 600s -d 100000 >"$work/serve-$s.out" 2>&1 &
        servers+=($!); pids+=($!)
    done
    sleep 1
    srv_rss0=0; for p in "${servers[@]}"; do srv_rss0=$((srv_rss0 + $(rss_kib "$p"))); done
    # Ramp at RATE in all, then every host measures the same window.
    ramp=$(python3 -c "print(int($count / $RATE) + 5)")
    start_at=$(( $(date +%s) + ramp ))
    gens=()
    left=$count
    for g in $(seq "$procs"); do
        n=$((left < PER_PROC ? left : PER_PROC)); left=$((left - n))
        # 200 source addresses per generator: the kernel's search for a free port is linear
        # in the connections already made between one pair of addresses (at 19,000 from one
        # address, 67 % of the generator's CPU was __inet_check_established).
        src="127.$((g % 250 + 1)).$((g / 250)).2-127.$((g % 250 + 1)).$((g / 250)).201"
        "$WB" bench "ws://127.0.0.1:$port/" -c "$n" --interval "$INTERVAL" -d "$DURATION" --size 32 \
            --connect-rate "$(python3 -c "print(max(1.0, $RATE * $n / $count))")" --start-at "$start_at" \
            --bind "$src" --cores "$CLIENT_CPU" --timeout 30s --json "$work/gen-$g.json" >"$work/gen-$g.out" 2>&1 &
        gens+=($!); pids+=($!)
    done
    # Mid-window: memory of everyone, sockets in the kernel.
    sleep $((ramp + ${DURATION%s} / 2))
    gen_rss=0; for p in "${gens[@]}"; do gen_rss=$((gen_rss + $(rss_kib "$p"))); done
    srv_rss=0; for p in "${servers[@]}"; do srv_rss=$((srv_rss + $(rss_kib "$p"))); done
    srv_cpu0=$(proc_cpu "${servers[@]}")
    read -r tcp1 mem1 < <(sockstat)
    slab1=$(slab_bytes)
    echo "kernel: TCP sockets $tcp0 -> $tcp1, TCP memory pages $mem0 -> $mem1, socket slabs $slab0 -> $slab1 B" >&2
    for p in "${gens[@]}"; do wait "$p"; done
    srv_cpu1=$(proc_cpu "${servers[@]}")
    for p in "${servers[@]}"; do kill "$p" 2>/dev/null; done
    wait "${servers[@]}" 2>/dev/null
    ls "$work"/gen-*.json >/dev/null 2>&1 && "$WB" merge --force "$work"/gen-*.json --json "$work/merged.json" >/dev/null 2>&1
    python3 - "$work" "$count" "$procs" "$gen_rss" "$srv_rss" "$srv_rss0" "$tcp0" "$tcp1" "$mem0" "$mem1" "$slab0" "$slab1" "$srv_cpu0" "$srv_cpu1" <<'PY'
import glob, json, os, sys
work, count, procs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
gen_rss, srv_rss, srv_rss0 = map(int, sys.argv[4:7])
tcp0, tcp1, mem0, mem1, slab0, slab1 = map(int, sys.argv[7:13])
srv_cpu0, srv_cpu1 = map(float, sys.argv[13:15])
runs = []
for f in sorted(glob.glob(f"{work}/gen-*.json")):
    try:
        runs.append(json.load(open(f)))
    except Exception:
        pass
opened = sum(r["connects"] for r in runs)
msgs = sum(r["ops"] for r in runs)
errors = sum(r["failed"]["total"] + r["connection_errors"]["total"] for r in runs)
set_up = max((r.get("set_up_in_s") or 0 for r in runs), default=0)
gen_cpu = sum(r["cpu_us_per_op"] * r["ops"] for r in runs) / msgs if msgs else float("nan")
conns = max(opened, 1)
why = []
for f in sorted(glob.glob(f"{work}/gen-*.out")):
    text = open(f).read()
    if "error:" in text:
        why.append(text.strip().splitlines()[-1][:140])
for r in runs:
    why += [s for s in r.get("error_samples", [])[:1]]
why = "; ".join(sorted(set(why))[:2]) or ("-" if opened >= count else "short, no error reported")
print(f"| {count:,} | {procs}+{procs} | {opened:,} | {set_up:.1f} s | {gen_rss / conns:.2f} | {(srv_rss - srv_rss0) / conns:.2f} | "
      f"{((mem1 - mem0) * 4 + (slab1 - slab0) / 1024) / conns:.2f} | {gen_cpu:.1f} | {(srv_cpu1 - srv_cpu0) * 1e6 / max(msgs, 1):.1f} | {msgs:,} | {errors:,} | {why} |")
PY
    rm -f "$work"/gen-* "$work"/serve-* "$work/merged.json"
    pids=()
done
echo
echo "generator and server KiB/conn: resident memory of all their processes mid-window over the connections opened (generators: the whole process; servers: above their start);"
echo "kernel KiB/conn: TCP memory (sockstat pages × 4 KiB) plus the socket slab caches' growth, over the connections opened (both ends of each connection are on this box)."
