#!/usr/bin/env bash
# Many mostly idle WebSocket (or Socket.IO) connections on one box, push-style (one small message per
# connection every INTERVAL): how long the connections take to open, what each costs in memory
# (the generator's, the server's, and the kernel's from /proc/net/sockstat and slabinfo), CPU
# per message, latency, and whether the kernel dropped packets — at each count in COUNTS.
#
# One `serve ws` (`serve sio`) process (on the last CPU) and one generator process (on the first) hold them
# all: the `uring` engine's sockets are io_uring direct descriptors, which live in its rings'
# own tables, not in the process's descriptor table, so a process limited to 20,000 open files
# (these machines' hard limit) holds a million in 50 rings. The generator has its own 2,047
# loopback source addresses (--bind: one address reaches one port from about 28,000 ephemeral
# ports, and the kernel finds a free port faster the fewer it already holds). On a kernel
# without direct descriptors for sockets (before 6.8) set PROCS: each count is then spread over
# PROCS generator and PROCS server processes (the servers share the port through SO_REUSEPORT,
# every generator measures the same window through --start-at, `wirebench merge` adds their
# results). Where the box stops a count short, the script says how far it got and what stopped
# it.
#
# Usage: tools/scale.sh            (COUNTS="10000 100000 1000000" INTERVAL=30s DURATION=60s
#                                   RATE=20000 connections/s in all, or auto (--connect-rate
#                                   auto; the window then opens RAMP s after the start,
#                                   default count/5000 + 5, or once all are set up if later),
#                                   PROCS=1, PROTO=ws or sio:
#                                   Socket.IO events with acks over Engine.IO 4, whose server
#                                   pings every connection every 25 s; WB=path runs another
#                                   build (generator and server), SERVE_WB=path another
#                                   build's server)
set -uo pipefail
COUNTS=${COUNTS:-10000 100000 1000000}
INTERVAL=${INTERVAL:-30s}
DURATION=${DURATION:-60s} # in seconds: 60s
RATE=${RATE:-20000}
PROCS=${PROCS:-1}
PROTO=${PROTO:-ws}
SERVE_ARGS=${SERVE_ARGS:-} # more `serve` options, e.g. "--ping-interval 120s" for sio
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
if [ -z "${WB:-}" ]; then # WB=path: another build's generator (and server), no cargo build
    (cd "$root" && cargo build -q --release)
    WB="$root/target/release/wirebench"
fi
SERVE_WB=${SERVE_WB:-$WB} # another build of the server, to measure it beside this one
cpus=$(nproc)
SERVER_CPU=$((cpus - 1))
CLIENT_CPU=0
secs=${DURATION%s}
# shellcheck source=tools/scratch.sh
. "$here/scratch.sh"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
# TCP sockets in use and TCP memory (pages) from sockstat; slab bytes of the socket caches.
sockstat() { awk '/^TCP:/ {for (i = 2; i < NF; i += 2) if ($i == "inuse" || $i == "mem") printf "%s ", $(i + 1)}' /proc/net/sockstat; }
slab_bytes() { awk '$1 ~ /^(TCP|tcp_bind_bucket|sock_inode_cache|dentry|filp|skbuff_head_cache)$/ {s += $2 * $4} END {printf "%.0f\n", s}' /proc/slabinfo 2>/dev/null || echo 0; }
# Packets dropped at the kernel's input backlogs, machine-wide.
drops() { python3 -c "print(sum(int(l.split()[1], 16) for l in open('/proc/net/softnet_stat')))"; }

echo "## wirebench scale — $(date -u +%Y-%m-%d)"
echo
echo "machine: $cpus CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), Linux $(uname -r); open files per process $(ulimit -Hn); servers (serve $PROTO${SERVE_ARGS:+ $SERVE_ARGS}, uring) on CPU $SERVER_CPU, generators (uring) on CPU $CLIENT_CPU; one ${INTERVAL} push per connection, ${DURATION} measured; $PROCS+$PROCS processes"
echo
# How fast this machine hands out memory it has not touched lately: on a VM whose host backs
# guest memory lazily (and takes freed memory back), the kernel's first write to a new socket's
# slab page waits for the host — the set-up rate of a million connections is bounded by it.
touch_us=$(python3 -c "
import mmap, time
m = mmap.mmap(-1, 1 << 30); t = time.perf_counter()
for i in range(0, len(m), 4096): m[i] = 1
first = time.perf_counter() - t; t = time.perf_counter()
for i in range(0, len(m), 4096): m[i] = 2
print(f'{first * 1e6 / (len(m) >> 12):.1f} µs per 4 KiB page on first touch, {(time.perf_counter() - t) * 1e6 / (len(m) >> 12):.2f} after')")
echo "memory: $touch_us (1 GiB, mapped fresh just before the runs)"
echo
echo "| connections | opened | set up in | generator KiB/conn | server KiB/conn | kernel KiB/conn | gen CPU µs/msg | server CPU µs/msg | messages due | answered | errors | p50 / p99 / p99.9 ms | drops in window | what stopped it |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"
for count in $COUNTS; do
    port=$(free_port)
    read -r tcp0 mem0 < <(sockstat)
    slab0=$(slab_bytes)
    servers=()
    for s in $(seq "$PROCS"); do
        "$SERVE_WB" serve "$PROTO" --listen "127.0.0.1:$port" --cores "$SERVER_CPU" --max-conns $((count + 1000)) \
            --idle-timeout 600s -d 100000 $SERVE_ARGS >"$work/serve-$s.out" 2>&1 &
        servers+=($!); pids+=($!)
    done
    sleep 1
    srv_rss0=0; for p in "${servers[@]}"; do srv_rss0=$((srv_rss0 + $(rss_kib "$p"))); done
    # Ramp at RATE in all, then every generator measures the same window.
    if [ "$RATE" = auto ]; then
        ramp=${RAMP:-$(python3 -c "print(int($count / 5000) + 5)")}
    else
        ramp=$(python3 -c "print(int($count / $RATE) + 5)")
    fi
    start_at=$(( $(date +%s) + ramp ))
    gens=()
    left=$count
    for g in $(seq "$PROCS"); do
        n=$(( (count + PROCS - 1) / PROCS )); n=$((left < n ? left : n)); left=$((left - n))
        src="127.$g.0.1-127.$g.7.255"
        "$WB" bench "$PROTO://127.0.0.1:$port/" -c "$n" --interval "$INTERVAL" -d "$DURATION" --size 32 \
            --connect-rate "$([ "$RATE" = auto ] && echo auto || python3 -c "print(max(1.0, $RATE * $n / $count))")" --start-at "$start_at" \
            --bind "$src" --cores "$CLIENT_CPU" --timeout 30s --json "$work/gen-$g.json" >"$work/gen-$g.out" 2>&1 &
        gens+=($!); pids+=($!)
    done
    # The server's CPU from a second into the window to a second before its end; memory and
    # the kernel's sockets mid-window.
    sleep $(( start_at - $(date +%s) + 1 ))
    srv_cpu0=$(proc_cpu "${servers[@]}")
    sleep $(( secs / 2 - 1 ))
    gen_rss=0; for p in "${gens[@]}"; do gen_rss=$((gen_rss + $(rss_kib "$p"))); done
    srv_rss=0; for p in "${servers[@]}"; do srv_rss=$((srv_rss + $(rss_kib "$p"))); done
    read -r tcp1 mem1 < <(sockstat)
    slab1=$(slab_bytes)
    sleep $(( start_at + secs - 1 - $(date +%s) ))
    srv_cpu1=$(proc_cpu "${servers[@]}")
    echo "kernel: TCP sockets $tcp0 -> $tcp1, TCP memory pages $mem0 -> $mem1, socket slabs $slab0 -> $slab1 B" >&2
    for p in "${gens[@]}"; do wait "$p"; done
    for p in "${servers[@]}"; do kill "$p" 2>/dev/null; done
    wait "${servers[@]}" 2>/dev/null
    if [ "$PROCS" -gt 1 ]; then
        "$WB" merge --force "$work"/gen-*.json --json "$work/merged.json" >/dev/null 2>&1
    else
        cp "$work/gen-1.json" "$work/merged.json" 2>/dev/null
    fi
    python3 - "$work" "$count" "$secs" "$INTERVAL" "$gen_rss" "$srv_rss" "$srv_rss0" "$tcp0" "$tcp1" "$mem0" "$mem1" "$slab0" "$slab1" "$srv_cpu0" "$srv_cpu1" <<'PY'
import glob, json, math, sys
work, count, secs, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
gen_rss, srv_rss, srv_rss0 = map(int, sys.argv[5:8])
tcp0, tcp1, mem0, mem1, slab0, slab1 = map(int, sys.argv[8:14])
srv_cpu0, srv_cpu1 = map(float, sys.argv[14:16])
runs = []
for f in sorted(glob.glob(f"{work}/gen-*.json")):
    try:
        runs.append(json.load(open(f)))
    except Exception:
        pass
try:
    merged = json.load(open(f"{work}/merged.json"))
except Exception:
    merged = {}
opened = sum(r["connects"] for r in runs)
msgs = sum(r["ops"] for r in runs)
sent = sum(r["sent"] for r in runs)
errors = sum(r["failed"]["total"] + r["connection_errors"]["total"] for r in runs)
set_up = max((r.get("set_up_in_s") or 0 for r in runs), default=0)
# Per connection one message every INTERVAL, the first at its offset (i/n of an interval,
# i among the n of its generator) into the window, none at or after the window's end.
every = float(interval.rstrip("s"))
due = 0
for r in runs:
    n = r["connections"]
    due += sum(max(0, math.ceil((secs - every * i / n) / every)) for i in range(n))
gen_cpu = sum(r["cpu_us_per_op"] * r["ops"] for r in runs) / msgs if msgs else float("nan")
lat = merged.get("latency_us", {})
ms = lambda k: f"{lat.get(k, float('nan')) / 1000:.2f}"
window = [((r.get("kernel_net") or {}).get("window") or {}).get("backlog_drops", 0) for r in runs]
conns = max(opened, 1)
why = []
for f in sorted(glob.glob(f"{work}/gen-*.out")):
    text = open(f).read()
    if "error:" in text:
        why.append(text.strip().splitlines()[-1][:140])
for r in runs:
    why += [s for s in r.get("error_samples", [])[:1]]
why = "; ".join(sorted(set(why))[:2]) or ("-" if opened >= count and msgs >= due else "short, no error reported")
auto = [r["connect_rate_auto"] for r in runs if r.get("connect_rate_auto")]
if auto:
    why = (f"auto: peak {sum(a['peak_per_s'] for a in auto):,.0f}/s, end {sum(a['final_per_s'] for a in auto):,.0f}/s, "
           f"halved {sum(a['decreases'] for a in auto)}; ") + why
srv_msgs = msgs * (secs - 2) / secs
print(f"| {count:,} | {opened:,} | {set_up:.1f} s | {gen_rss / conns:.2f} | {(srv_rss - srv_rss0) / conns:.2f} | "
      f"{((mem1 - mem0) * 4 + (slab1 - slab0) / 1024) / conns:.2f} | {gen_cpu:.1f} | {(srv_cpu1 - srv_cpu0) * 1e6 / max(srv_msgs, 1):.1f} | "
      f"{due:,} | {msgs:,} | {errors:,} | {ms('p50')} / {ms('p99')} / {ms('p999')} | {max(window, default=0):,} | {why} |")
PY
    rm -f "$work"/gen-* "$work"/serve-* "$work/merged.json"
    pids=()
done
echo
echo "generator and server KiB/conn: resident memory of all their processes mid-window over the connections opened (generators: the whole process; servers: above their start);"
echo "kernel KiB/conn: TCP memory (sockstat pages × 4 KiB) plus the socket slab caches' growth, over the connections opened (both ends of each connection are on this box);"
echo "gen CPU: the generator's engine CPU over the measured window (its report), per message; server CPU: its processes' from /proc over the window less a second at each end;"
echo "drops in window: packets the kernel dropped at its input backlog during the measured window (each one a retransmission, 200 ms or more, for its connection)."
