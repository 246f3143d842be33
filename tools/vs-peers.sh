#!/usr/bin/env bash
# wirebench's HTTP client against wrk, ab, h2load and oha, side by side on one machine.
#
# Part 1: each client, pinned to the first CPU, loads nginx (one worker pinned to the last CPU)
# with the same connections and duration, tools alternating over ROUNDS rounds; per tool the
# median requests/s, client CPU µs per request (user + sys from the process's own accounting,
# GNU time), user-space µs per request, syscalls per request (strace -c -f, separate short run)
# and peak RSS; ratios against wrk. Part 1b: the same over TLS (nginx with `ssl`, TLS 1.3, a
# certificate made here; every client skips verification or trusts it). Part h2: HTTP/2 clients
# against nginx (`listen … http2`, h2c; and `ssl http2`) at CONNS connections × STREAMS streams:
# h2load (the anchor), wirebench's h2c:// and h2:// clients, wirebench's HTTP/1.1 client
# pipelining STREAMS deep at the same concurrency, and the floor: benches/minimal_h2.rs, alone and
# keeping the server's HPACK table in step (minimal-h2-hpack), and over TLS keeping it (minimal-h2-tls). Part h2b: nginx's h2c against `wirebench
# serve h2` at the same offered load, server CPU per request. Part h3: wirebench's HTTP/3 client
# against its HTTP/2-over-TLS client, each on its built-in server, and its floor (benches/minimal_h3.rs). Part h3p: wirebench's HTTP/3
# client against peer HTTP/3 clients (quic-go's, aioquic's) at equal load on `serve h3`. Part h3s:
# `serve h3` against quic-go's HTTP/3 server at the same offered load, server CPU per request. Part 2: nginx against `wirebench serve http` on the same CPU,
# loaded by the same clients. Part 3: memory per connection at 10,000 connections, and RSS of a
# short and a long run. Stops by itself, cleans up, prints the machine.
#
# Usage: tools/vs-peers.sh            (ROUNDS=3 DURATION=5 CONNS=64 LONG=60; QUICK=1 skips part 3's long run;
#                                      PARTS="1 tls h2 h2b h3 h3p h3s 2 2b 3" picks parts; CLIENTS="wirebench minimal" picks
#                                      part 1's clients (`minimal-timed`: the minimal loop timing each
#                                      request); BASE=path/to/an/older/wirebench adds it as
#                                      `wirebench-base` (part 1) and as a fifth server (part 2b), for a
#                                      change measured side by side; LOADS="40000 80000 depth16" and
#                                      SERVERS="nginx tokio-uring uring minimal" pick part 2b's loads and servers)
set -euo pipefail
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
CONNS=${CONNS:-64}
LONG=${LONG:-60}
STREAMS=${STREAMS:-10}
PARTS=" ${PARTS:-1 tls h2 h2b h3 h3p h3s 2 2b 3} "
part() { [[ $PARTS == *" $1 "* ]]; }
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
cpus=$(nproc)
CLIENT_CPU=0
SERVER_CPU=$((cpus - 1))

# --- tools ---------------------------------------------------------------------------------
need=()
command -v wrk >/dev/null || need+=(wrk)
command -v ab >/dev/null || need+=(apache2-utils)
command -v h2load >/dev/null || need+=(nghttp2-client)
command -v strace >/dev/null || need+=(strace)
[ -x /usr/bin/time ] || need+=(time)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
OHA=$(command -v oha || true)
if [ -z "$OHA" ]; then
    [ -x "$here/bin/oha/bin/oha" ] || cargo install -q --locked oha --root "$here/bin/oha"
    OHA="$here/bin/oha/bin/oha"
fi
(cd "$root" && cargo build -q --release)
WB="$root/target/release/wirebench"
# shellcheck source=tools/scratch.sh
. "$here/scratch.sh"
# The floors, each a bench's release binary (tools/scratch.sh's bench_binary):
# - a bare io_uring keep-alive loop with multishot receive (benches/minimal_loop.rs);
# - HTTP/2's: pre-encoded HEADERS, answers read by their frame heads (benches/minimal_h2.rs);
# - HTTP/3's: quinn-proto and io_uring, pre-encoded HEADERS, answers read by their frame heads
#   (benches/minimal_h3.rs);
# - a server's: a bare io_uring keep-alive server with multishot receive (benches/minimal_server.rs).
MINIMAL=$(cd "$root" && bench_binary minimal_loop)
MINIMAL_H2=$(cd "$root" && bench_binary minimal_h2)
MINIMAL_H3=$(cd "$root" && bench_binary minimal_h3)
MINIMAL_SERVER=$(cd "$root" && bench_binary minimal_server)

start_serve() {
    local port=$1 engine=${2:-} kind=${3:-http}
    "$WB" serve "$kind" --listen "127.0.0.1:$port" --cores "$SERVER_CPU" -d 100000 ${engine:+--engine $engine} >/dev/null &
    pids+=($!)
    wait_port "$port"
}

# The last server started, under wirebench's load at URL (bench's further arguments after it):
# appends "NAME cpu-µs-per-request requests/s" to $res, the server's CPU from /proc.
server_cpu_per_req() {
    local name=$1 url=$2 key=${pids[-1]} before after
    shift 2
    before=$(proc_cpu "$key")
    "$WB" bench "$url" -c "$CONNS" -d "${DURATION}s" --cores "$CLIENT_CPU" "$@" --json "$work/eq.json" >/dev/null 2>&1 || true
    after=$(proc_cpu "$key")
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); n=d['ops']; print(sys.argv[2], (float(sys.argv[4])-float(sys.argv[3]))*1e6/n if n else 'nan', d['ops_per_sec'])" "$work/eq.json" "$name" "$before" "$after" >>"$res"
}

# The row of an equal-load table from RES's "NAME cpu-µs-per-request requests/s" lines at LOAD:
# servers A and B's medians (µs per request, requests/s) and B over A.
pair_row() {
    python3 - "$@" <<'PY'
import statistics, sys
res, load, a, b = sys.argv[1:]
rows = {}
for line in open(res):
    name, cpu, rps = line.split()
    rows.setdefault(name, []).append((float(cpu), float(rps)))
(x, xr), (y, yr) = ([statistics.median(v[i] for v in rows[k]) for i in range(2)] for k in (a, b))
print(f"| {int(load):,} req/s | {x:.2f} ({xr:,.0f}) | {y:.2f} ({yr:,.0f}) | {y / x:.2f} |")
PY
}

start_minimal_server() {
    taskset -c "$SERVER_CPU" "$MINIMAL_SERVER" "127.0.0.1:$1" >/dev/null &
    pids+=($!)
    wait_port "$1"
}

stop_servers() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    pids=()
}

# The command line of each client, loading $1 for $2 seconds.
client_cmd() {
    local tool=$1 url=$2 secs=$3 insecure=""
    # Over TLS: wrk, ab and h2load do not verify certificates; oha and wirebench are told not to.
    [[ $url == https* ]] && insecure=--insecure
    case $tool in
        wrk) echo "wrk -t1 -c$CONNS -d${secs}s $url" ;;
        ab) echo "ab -q -k -c $CONNS -t $secs -n 2000000 $url" ;;
        h2load) echo "h2load --h1 -t1 -c $CONNS -D $secs $url" ;;
        oha) echo "$OHA --no-tui $insecure -c $CONNS -z ${secs}s $url" ;;
        minimal) local hostport=${url#http://}; echo "$MINIMAL ${hostport%/} $CONNS $secs" ;;
        minimal-timed) local hostport=${url#http://}; echo "$MINIMAL ${hostport%/} $CONNS $secs timed" ;;
        minimal-h2) local hostport=${url#http://}; echo "$MINIMAL_H2 ${hostport%/} $CONNS $STREAMS $secs" ;;
        minimal-h2-hpack) local hostport=${url#http://}; echo "$MINIMAL_H2 ${hostport%/} $CONNS $STREAMS $secs hpack" ;;
        minimal-h2-tls) local hostport=${url#https://}; echo "$MINIMAL_H2 ${hostport%/} $CONNS $STREAMS $secs hpack tls" ;;
        wirebench) echo "$WB bench $url $insecure -c $CONNS -d ${secs}s --cores $CLIENT_CPU --engine uring --json -" ;;
        wirebench-base) echo "$BASE bench $url $insecure -c $CONNS -d ${secs}s --cores $CLIENT_CPU --engine uring --json -" ;;
        # The same client pipelining 16 requests per connection: it then costs so little per
        # request that the server, not the client, is what saturates.
        wirebench-depth16) echo "$WB bench $url -c $CONNS --depth 16 -d ${secs}s --cores $CLIENT_CPU --engine uring --json -" ;;
        # HTTP/2 (part h2): h2load is h2c for http:// and h2 by ALPN for https://.
        h2load-h2) echo "h2load -t1 -c $CONNS -m $STREAMS -D $secs $url" ;;
        wirebench-h2|wirebench-base-h2)
            local u=${url/#http:/h2c:}; u=${u/#https:/h2:} bin=$WB
            [ "$tool" = wirebench-base-h2 ] && bin=$BASE
            echo "$bin bench $u $insecure -c $CONNS --streams $STREAMS -d ${secs}s --cores $CLIENT_CPU --engine uring --json -" ;;
        # Its HTTP/1.1 client at the same concurrency, pipelining (against $H1_URL).
        wirebench-h1) echo "$WB bench $H1_URL $insecure -c $CONNS --depth $STREAMS -d ${secs}s --cores $CLIENT_CPU --engine uring --json -" ;;
    esac
}

# Requests per second from a client's output.
rps_of() {
    local tool=$1 file=$2
    case $tool in
        wrk) awk '/Requests\/sec:/ {print $2}' "$file" ;;
        ab) awk '/Requests per second:/ {print $4}' "$file" ;;
        h2load*) sed -n 's/.*finished in [^,]*, \([0-9.]*\) req\/s.*/\1/p' "$file" ;;
        oha) awk '/Requests\/sec:/ {print $2}' "$file" ;;
        minimal*) sed -n 's/.* = \([0-9.]*\)\/s/\1/p' "$file" ;;
        wirebench*) python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ops_per_sec"])' "$file" ;;
    esac
}

# One timed run: prints "rps user_s sys_s rss_kb".
run_one() {
    local tool=$1 url=$2 secs=$3
    local out="$work/out" tm="$work/time"
    # shellcheck disable=SC2046
    /usr/bin/time -f "%U %S %M" -o "$tm" taskset -c "$CLIENT_CPU" $(client_cmd "$tool" "$url" "$secs") >"$out" 2>&1 || true
    echo "$(rps_of "$tool" "$out") $(cat "$tm" | tail -1)"
}

# Syscalls per request in a short run under strace.
syscalls_per_req() {
    local tool=$1 url=$2 secs=2
    local out="$work/sout" st="$work/strace"
    # shellcheck disable=SC2046
    strace -c -f -o "$st" taskset -c "$CLIENT_CPU" $(client_cmd "$tool" "$url" "$secs") >"$out" 2>&1 || true
    local calls; calls=$(awk '$NF=="total" {print $(NF-2)}' "$st")
    local rps; rps=$(rps_of "$tool" "$out")
    python3 -c "import sys; c,r,s=map(float,sys.argv[1:]); print(f'{c/(r*s):.3f}' if r>0 else 'nan')" "$calls" "${rps:-0}" "$secs"
}

read -r -a TOOLS <<<"${CLIENTS:-wrk wirebench ab h2load oha minimal}"
[ -n "${BASE:-}" ] && TOOLS+=(wirebench-base)

measure_clients() {
    local url=$1 label=$2
    local results="$work/results-${label//[^A-Za-z0-9]/_}"
    : >"$results"
    for r in $(seq "$ROUNDS"); do
        # Rotate the order each round so that no tool always runs first or last.
        local n=${#TOOLS[@]} order=()
        for i in $(seq 0 $((n - 1))); do order+=("${TOOLS[$(((i + r) % n))]}"); done
        for t in "${order[@]}"; do
            echo "$t $(run_one "$t" "$url" "$DURATION")" >>"$results"
        done
    done
    for t in "${TOOLS[@]}"; do echo "$t sys $(syscalls_per_req "$t" "$url")" >>"$results"; done
    python3 - "$results" "$DURATION" "$label" "${ANCHOR:-wrk}" <<'PY'
import statistics, sys
rows, secs, label, anchor = {}, float(sys.argv[2]), sys.argv[3], sys.argv[4]
sysc = {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[1] == "sys":
        sysc[f[0]] = float(f[2]); continue
    if len(f) < 5 or not f[1]: continue
    rps, user, system, rss = float(f[1]), float(f[2]), float(f[3]), int(f[4])
    reqs = rps * secs
    rows.setdefault(f[0], []).append((rps, (user + system) * 1e6 / reqs, user * 1e6 / reqs, rss))
med = {t: [statistics.median(x[i] for x in v) for i in range(4)] for t, v in rows.items()}
w = med.get(anchor)
print(f"\n### {label}: clients on CPU 0, median of {len(next(iter(rows.values())))} alternating rounds of {secs:.0f}s\n")
print(f"| client | requests/s | CPU µs/req | user µs/req | syscalls/req | peak RSS | CPU vs {anchor} | user vs {anchor} | syscalls vs {anchor} |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for t, (rps, cpu, user, rss) in sorted(med.items(), key=lambda kv: kv[1][1]):
    s = sysc.get(t, float("nan"))
    # No anchor among the tools run (CLIENTS left it out): no ratios, a dash.
    ratio = lambda a, b: f"{a / b:.2f}" if w and b else "-"
    wc, wu = (w[1], w[2]) if w else (0, 0)
    print(f"| {t} | {rps:,.0f} | {cpu:.2f} | {user:.2f} | {s:.2f} | {rss / 1024:.1f} MiB | {ratio(cpu, wc)} | {ratio(user, wu)} | {ratio(s, sysc.get(anchor, 0))} |")
# Within a round the tools ran one after the other: a ratio taken round by round is paired
# (the machine's drift between rounds cancels); its median and range over the rounds.
floor = next((f for f in ("minimal", "minimal-h2", "minimal-h3") if f in rows), None)
if floor:
    paired = []
    for t in sorted(rows):
        if t == floor or not t.startswith("wirebench"): continue
        r = sorted(a[1] / b[1] for a, b in zip(rows[t], rows[floor]))
        paired.append(f"{t} {statistics.median(r):.3f} ({r[0]:.3f}–{r[-1]:.3f})")
    if paired:
        print(f"\nCPU per request ÷ {floor}'s, paired round by round over {len(rows[floor])} rounds: " + ", ".join(paired))
PY
}

echo "## wirebench vs peers — $(date -u +%Y-%m-%d)"
echo
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), Linux $(uname -r); clients on CPU $CLIENT_CPU, server on CPU $SERVER_CPU; $CONNS connections"

# Part 1: the clients against nginx.
if part 1; then
    port=$(free_port)
    start_nginx "$port"
    measure_clients "http://127.0.0.1:$port/" "Clients against nginx (1 worker)"
    stop_servers
fi

# Part 1b: the same over TLS 1.3 (the handshake is once per connection: this is the per-request
# cost of the records).
if part tls; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
        -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
    port=$(free_port)
    start_nginx "$port" tls
    tls_tools=() # the minimal loop speaks no TLS
    for t in "${TOOLS[@]}"; do [ "$t" != minimal ] && tls_tools+=("$t"); done
    TOOLS=("${tls_tools[@]}")
    measure_clients "https://127.0.0.1:$port/" "Clients against nginx over TLS 1.3 (1 worker)"
    stop_servers
fi

# Part h2: HTTP/2 clients against nginx, h2c and over TLS, at CONNS × STREAMS; h2load is the
# anchor. wirebench's HTTP/1.1 client beside them pipelines as deep against a plain nginx.
if part h2; then
    [ -f "$work/cert.pem" ] || openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout "$work/key.pem" \
        -out "$work/cert.pem" 2>/dev/null
    saved=("${TOOLS[@]}")
    for mode in h2c h2tls; do
        p1=$(free_port); p2=$(free_port)
        start_nginx "$p1" "$mode"
        if [ "$mode" = h2c ]; then
            start_nginx "$p2"
            H1_URL="http://127.0.0.1:$p2/"; url="http://127.0.0.1:$p1/"
        else
            start_nginx "$p2" tls
            H1_URL="https://127.0.0.1:$p2/"; url="https://127.0.0.1:$p1/"
        fi
        TOOLS=(h2load-h2 wirebench-h2 wirebench-h1)
        # The floor: alone and keeping the table (h2c); over TLS, keeping the table.
        if [ "$mode" = h2c ]; then TOOLS+=(minimal-h2 minimal-h2-hpack); else TOOLS+=(minimal-h2-tls); fi
        [ -n "${BASE:-}" ] && TOOLS+=(wirebench-base-h2)
        ANCHOR=h2load-h2 measure_clients "$url" "HTTP/2 ($mode) against nginx, $CONNS connections × $STREAMS streams (wirebench-h1: HTTP/1.1 pipelining $STREAMS deep)"
        stop_servers
    done
    TOOLS=("${saved[@]}")
fi

# Part h2b: the HTTP/2 servers at the same offered load (wirebench h2c:// --rate, CONNS × STREAMS,
# on CPU 0): nginx's h2c and wirebench serve h2, each alone on CPU 1, CPU per request from /proc.
if part h2b; then
echo
echo "### HTTP/2 server CPU per request at the same offered load (server on CPU $SERVER_CPU, wirebench h2c:// --rate on CPU $CLIENT_CPU, $CONNS connections × $STREAMS streams; median of $ROUNDS alternating rounds of ${DURATION}s)"
echo
echo "| load | nginx h2c µs/req (req/s) | serve h2 (uring) µs/req (req/s) | serve h2 / nginx |"
echo "|---|---:|---:|---:|"
for load in 40000 80000; do
    res="$work/h2eq-$load"; : >"$res"
    for r in $(seq "$ROUNDS"); do
        for server in nginx serve; do
            port=$(free_port)
            if [ "$server" = nginx ]; then start_nginx "$port" h2c; else start_serve "$port" "" h2; fi
            server_cpu_per_req "$server" "h2c://127.0.0.1:$port/" --streams "$STREAMS" --rate "$load"
            stop_servers
        done
    done
    pair_row "$res" "$load" nginx serve
done
fi

# Part h3: wirebench's HTTP/3 client (h3://, QUIC, GSO) against its own HTTP/2-over-TLS client
# (h2://), each loading the built-in server of its protocol (serve h3; serve h2 --tls) alone on
# the server CPU, CONNS connections × STREAMS streams; client CPU per request from GNU time. And
# the floor under each: benches/minimal_h3.rs (quinn-proto, the same I/O, no HTTP/3 state
# machine) on serve h3, benches/minimal_h2.rs over TLS (rustls, frame heads, the HPACK table
# kept) on serve h2 --tls.
if part h3; then
    res="$work/h3-vs-h2"; : >"$res"
    for r in $(seq "$ROUNDS"); do
        for proto in h2 h3 floor floor-h2; do
            port=$(free_port)
            if [ "$proto" = h2 ] || [ "$proto" = floor-h2 ]; then
                "$WB" serve h2 --tls --listen "127.0.0.1:$port" --cores "$SERVER_CPU" -d 100000 >/dev/null &
                pids+=($!); wait_port "$port"
            else
                "$WB" serve h3 --listen "127.0.0.1:$port" --cores "$SERVER_CPU" -d 100000 >"$work/h3.out" &
                pids+=($!)
                wait_listening "$work/h3.out"
            fi
            if [ "$proto" = floor ] || [ "$proto" = floor-h2 ]; then
                floor=("$MINIMAL_H3" "127.0.0.1:$port" "$CONNS" "$STREAMS" "$DURATION")
                [ "$proto" = floor-h2 ] && floor=("$MINIMAL_H2" "127.0.0.1:$port" "$CONNS" "$STREAMS" "$DURATION" hpack tls)
                /usr/bin/time -f "%U %S" -o "$work/time" taskset -c "$CLIENT_CPU" "${floor[@]}" >"$work/h3.floor" 2>&1 || true
                python3 -c "import re,sys; m=re.search(r'requests (\d+) in ([0-9.]+) s', open(sys.argv[1]).read()); n,t=(int(m[1]),float(m[2])) if m else (0,1); u,s=map(float,open(sys.argv[2]).read().split()[-2:]); print(sys.argv[3], (u+s)*1e6/n if n else 'nan', u*1e6/n if n else 'nan', n/t, 'nan', 'nan')" \
                    "$work/h3.floor" "$work/time" "$proto" >>"$res"
            else
                /usr/bin/time -f "%U %S" -o "$work/time" taskset -c "$CLIENT_CPU" "$WB" bench "$proto://127.0.0.1:$port/" --insecure \
                    -c "$CONNS" --depth "$STREAMS" -d "${DURATION}s" --cores "$CLIENT_CPU" --json "$work/h3.json" >/dev/null 2>&1 || true
                python3 -c "import json,sys; d=json.load(open(sys.argv[1])); u,s=map(float,open(sys.argv[2]).read().split()[-2:]); print(sys.argv[3], (u+s)*1e6/d['ops'] if d['ops'] else 'nan', u*1e6/d['ops'] if d['ops'] else 'nan', d['ops_per_sec'], d['bytes']['tx_per_op'], d['bytes']['rx_per_op'])" \
                    "$work/h3.json" "$work/time" "$proto" >>"$res"
            fi
            stop_servers
        done
    done
    python3 - "$res" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, cpu, user, rps, tx, rx = line.split()
    rows.setdefault(name, []).append((float(cpu), float(user), float(rps), float(tx), float(rx)))
med = {k: [statistics.median(x[i] for x in v) for i in range(5)] for k, v in rows.items()}
print(f"\n### HTTP/3 (QUIC, GSO) against HTTP/2 over TLS: wirebench's clients on CPU 0, each against its built-in server on CPU 1, and the floors (benches/minimal_h3.rs on serve h3, minimal_h2.rs over TLS on serve h2 --tls); median of {len(rows['h3'])} alternating rounds\n")
print("| client | requests/s | client CPU µs/req | of it user | tx B/req | rx B/req | CPU vs h2:// |")
print("|---|---:|---:|---:|---:|---:|---:|")
for k, label in (("h2", "h2://"), ("floor-h2", "minimal-h2-tls"), ("h3", "h3://"), ("floor", "minimal-h3")):
    cpu, user, rps, tx, rx = med[k]
    b = lambda v: "—" if v != v else f"{v:.1f}"
    print(f"| {label} | {rps:,.0f} | {cpu:.2f} | {user:.2f} | {b(tx)} | {b(rx)} | {cpu / med['h2'][0]:.2f} |")
print(f"\nh3:// against its floor: {med['h3'][0] / med['floor'][0]:.2f}x (user {med['h3'][1] / med['floor'][1]:.2f}x); h2:// against its floor: {med['h2'][0] / med['floor-h2'][0]:.2f}x; the floors, HTTP/3 against HTTP/2 over TLS: {med['floor'][0] / med['floor-h2'][0]:.2f}x")
PY
fi

# Part h3p: wirebench's HTTP/3 client against peer HTTP/3 clients — quic-go's (tools/h3-go load)
# and aioquic's (tools/h3-client.py), both from tools/install-peers.sh — at equal load on `serve
# h3` (CPU 1), every client on CPU 0 with CONNS connections × STREAMS streams. Two loads a peer:
# its own most (closed loop: it saturates its CPU), wirebench paced (--rate) at that rate; and
# both paced at half of it. Client CPU per request from GNU time (start-up and handshakes in
# it, for every client), alternating over ROUNDS rounds.
if part h3p; then
    [ -x "$here/bin/h3-go" ] && python3 -c 'import aioquic' 2>/dev/null || "$here/install-peers.sh" >/dev/null
    res="$work/h3-peers"; : >"$res"
    # h3_client NAME PEER RATE: one client's run (PEER: quic-go, aioquic or wirebench; RATE 0: closed
    # loop); appends "NAME cpu-µs-per-request requests/s" to $res and prints the rate.
    h3_client() {
        local name=$1 peer=$2 rate=$3 port cmd
        port=$(free_port)
        "$WB" serve h3 --listen "127.0.0.1:$port" --cores "$SERVER_CPU" -d 100000 >"$work/h3.out" &
        pids+=($!)
        wait_listening "$work/h3.out"
        case $peer in
            quic-go) cmd=("$here/bin/h3-go" load "https://127.0.0.1:$port/" "$CONNS" "$STREAMS" "$DURATION" "$rate") ;;
            aioquic) cmd=(python3 "$here/h3-client.py" "https://127.0.0.1:$port/" "$CONNS" "$STREAMS" "$DURATION" "$rate") ;;
            wirebench) cmd=("$WB" bench "h3://127.0.0.1:$port/" --insecure -c "$CONNS" --depth "$STREAMS"
                -d "${DURATION}s" --cores "$CLIENT_CPU" --rate "$rate" --json "$work/h3p.json") ;;
        esac
        /usr/bin/time -f "%U %S" -o "$work/time" taskset -c "$CLIENT_CPU" "${cmd[@]}" >"$work/h3p.out" 2>/dev/null || true
        stop_servers
        python3 - "$name" "$peer" "$work/h3p.out" "$work/h3p.json" "$work/time" >>"$res" <<'PY'
import json, sys
name, peer, out, js, t = sys.argv[1:]
u, s = map(float, open(t).read().split()[-2:])
if peer == "wirebench":
    d = json.load(open(js)); n, secs = d["ops"], d["ops"] / d["ops_per_sec"] if d["ops"] else 1
else:
    f = open(out).read().split(); n, secs = int(f[1]), float(f[5])
print(name, (u + s) * 1e6 / n if n else "nan", n / secs)
PY
        tail -1 "$res" | awk '{printf "%d", $3}'
    }
    for r in $(seq "$ROUNDS"); do
        for peer in quic-go aioquic; do
            most=$(h3_client "$peer@most" "$peer" 0)
            h3_client "wirebench@$peer-most" wirebench "$most" >/dev/null
            half=$((most / 2))
            h3_client "$peer@half" "$peer" "$half" >/dev/null
            h3_client "wirebench@$peer-half" wirebench "$half" >/dev/null
        done
    done
    python3 - "$res" "$CONNS" "$STREAMS" "$DURATION" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, cpu, rps = line.split()
    rows.setdefault(name, []).append((float(cpu), float(rps)))
med = {k: [statistics.median(x[i] for x in v) for i in range(2)] for k, v in rows.items()}
rounds = len(rows["quic-go@most"])
print(f"\n### HTTP/3 clients at equal load on serve h3 (CPU 1): each client on CPU 0, {sys.argv[2]} connections × {sys.argv[3]} streams, {sys.argv[4]} s, median of {rounds} alternating rounds\n")
print("| peer | load | peer req/s | peer CPU µs/req | wirebench req/s | wirebench CPU µs/req | wirebench / peer |")
print("|---|---|---:|---:|---:|---:|---:|")
for peer in ("quic-go", "aioquic"):
    for load, what in (("most", "the peer's most (closed loop); wirebench paced at it"), ("half", "both paced at half of it")):
        p, w = med[f"{peer}@{load}"], med[f"wirebench@{peer}-{load}"]
        print(f"| {peer} | {what} | {p[1]:,.0f} | {p[0]:.1f} | {w[1]:,.0f} | {w[0]:.1f} | {w[0] / p[0]:.2f} |")
PY
fi

# Part h3s: the HTTP/3 servers at the same offered load: quic-go's (tools/h3-go, from
# tools/install-peers.sh) and wirebench serve h3, each alone on CPU 1, loaded by wirebench
# h3:// --rate on CPU 0 (CONNS × STREAMS); server CPU per request from /proc (all its threads).
if part h3s; then
    [ -x "$here/bin/h3-go" ] || "$here/install-peers.sh" >/dev/null
    [ -f "$work/cert.pem" ] || openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout "$work/key.pem" \
        -out "$work/cert.pem" 2>/dev/null
    echo
    echo "### HTTP/3 server CPU per request at the same offered load (server on CPU $SERVER_CPU, wirebench h3:// --rate on CPU $CLIENT_CPU, $CONNS connections × $STREAMS streams; median of $ROUNDS alternating rounds of ${DURATION}s)"
    echo
    echo "| load | quic-go µs/req (req/s) | serve h3 (uring) µs/req (req/s) | serve h3 / quic-go |"
    echo "|---|---:|---:|---:|"
    for load in ${H3S_LOADS:-10000 20000}; do
        res="$work/h3eq-$load"; : >"$res"
        for r in $(seq "$ROUNDS"); do
            for server in quic-go serve; do
                port=$(free_port)
                if [ "$server" = quic-go ]; then
                    taskset -c "$SERVER_CPU" "$here/bin/h3-go" "$port" "$work/cert.pem" "$work/key.pem" >"$work/h3s.out" &
                else
                    "$WB" serve h3 --listen "127.0.0.1:$port" --cores "$SERVER_CPU" -d 100000 >"$work/h3s.out" &
                fi
                pids+=($!)
                wait_listening "$work/h3s.out"
                server_cpu_per_req "$server" "h3://127.0.0.1:$port/" --insecure --depth "$STREAMS" --rate "$load"
                stop_servers
            done
        done
        pair_row "$res" "$load" quic-go serve
    done
fi

# Part 2: nginx against wirebench serve http, the same clients (wirebench's and wrk), alternating.
if part 2; then
p1=$(free_port); p2=$(free_port)
echo
echo "### Servers on CPU $SERVER_CPU: requests/s, the same client on CPU $CLIENT_CPU, $CONNS connections"
echo
echo "| client | nginx | wirebench serve http | serve / nginx |"
echo "|---|---:|---:|---:|"
for client in wirebench wrk wirebench-depth16; do
    ng=(); wb=()
    for r in $(seq "$ROUNDS"); do
        start_nginx "$p1"; ng+=("$(run_one "$client" "http://127.0.0.1:$p1/" "$DURATION" | cut -d' ' -f1)"); stop_servers
        start_serve "$p2"; wb+=("$(run_one "$client" "http://127.0.0.1:$p2/" "$DURATION" | cut -d' ' -f1)"); stop_servers
    done
    python3 -c "import statistics,sys; a=list(map(float,sys.argv[2].split())); b=list(map(float,sys.argv[3].split())); n,w=statistics.median(a),statistics.median(b); print(f'| {sys.argv[1]} | {n:,.0f} | {w:,.0f} | {w/n:.2f} |')" "$client" "${ng[*]}" "${wb[*]}"
done

fi

# Part 2b: the servers compared like with like: the same offered load (wirebench --rate, 64
# connections, generator on CPU 0), each server alone on CPU 1, its CPU per request from /proc
# (user + system of its processes), beside the floor for any io_uring server (benches/minimal_server.rs);
# and at saturation with a pipelining client (depth 16).
if part 2b; then
LOADS=${LOADS:-40000 80000 depth16}
SERVERS=${SERVERS:-nginx tokio-uring uring minimal}
echo
echo "### Server CPU per request at the same offered load (server on CPU $SERVER_CPU, wirebench --rate on CPU $CLIENT_CPU, $CONNS connections; median of $ROUNDS alternating rounds of ${DURATION}s)"
echo
echo "| load | nginx µs/req | serve http (tokio-uring) µs/req | serve http (uring) µs/req | minimal server µs/req | uring / nginx | tokio-uring / nginx | minimal / nginx |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for load in $LOADS; do
    res="$work/eq-$load"; : >"$res"
    for r in $(seq "$ROUNDS"); do
        for server in $SERVERS ${BASE:+base}; do
            port=$(free_port)
            case $server in
                nginx) start_nginx "$port" ;;
                minimal) start_minimal_server "$port" ;;
                base) WB=$BASE start_serve "$port" uring ;;
                *) start_serve "$port" "$server" ;;
            esac
            if [ "$load" = depth16 ]; then args=(--depth 16); else args=(--rate "$load"); fi
            server_cpu_per_req "$server" "http://127.0.0.1:$port/" "${args[@]}"
            stop_servers
        done
    done
    python3 - "$res" "$load" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, cpu, rps = line.split()
    rows.setdefault(name, []).append((float(cpu), float(rps)))
med = {k: statistics.median(c for c, _ in v) for k, v in rows.items()}
rps = {k: statistics.median(r for _, r in v) for k, v in rows.items()}
cell = lambda k: f"{med[k]:.2f}" if k in med else "—"
over = lambda a, b: f"{med[a] / med[b]:.2f}" if a in med and b in med else "—"
load = sys.argv[2] if sys.argv[2] == "depth16" else f"{int(sys.argv[2]):,} req/s"
if sys.argv[2] == "depth16":
    load = "saturation, depth 16 (" + ", ".join(f"{k} {rps[k]:,.0f}/s" for k in rps) + ")"
print(f"| {load} | {cell('nginx')} | {cell('tokio-uring')} | {cell('uring')} | {cell('minimal')} | {over('uring', 'nginx')} | {over('tokio-uring', 'nginx')} | {over('minimal', 'nginx')} |")
# Each round's servers ran one after the other: the ratio within a round is paired (the
# machine's drift between rounds cancels), its median and range over the rounds.
def paired(a, b):
    if a not in rows or b not in rows:
        return ""
    r = sorted(x[0] / y[0] for x, y in zip(rows[a], rows[b]))
    return f"{statistics.median(r):.3f} ({r[0]:.3f}–{r[-1]:.3f}, {len(r)} rounds)"
if "minimal" in rows:
    print(f"|  ↳ paired, round by round: uring ÷ minimal {paired('uring', 'minimal')} | | | | | | | |")
if "base" in med:
    print(f"|  ↳ BASE's serve http (uring), the same rounds | | | {med['base']:.2f} | | this build ÷ BASE {med['uring']/med['base']:.2f}, paired {paired('uring', 'base')} | | uring ÷ minimal {over('uring', 'minimal')}, BASE ÷ minimal {over('base', 'minimal')}, paired {paired('base', 'minimal')} |")
PY
done
fi

# Part 3: memory.
if part 3; then
echo
echo "### Memory of the wirebench client (peak RSS, GNU time)"
echo
port=$(free_port)
start_serve "$port"
rss() { /usr/bin/time -f "%M" -o "$work/m" taskset -c "$CLIENT_CPU" "$WB" bench "http://127.0.0.1:$port/" -c "$1" -d "$2s" --cores "$CLIENT_CPU" --engine uring >/dev/null 2>&1; tail -1 "$work/m"; }
base=$(rss 1 2); big=$(rss 10000 5)
python3 -c "import sys; b,g=map(int,sys.argv[1:]); print(f'- 10,000 connections: {g/1024:.1f} MiB peak, {(g-b)/10000:.1f} KiB per connection above a 1-connection run ({b/1024:.1f} MiB)')" "$base" "$big"
if [ "${QUICK:-0}" != 1 ]; then
    short=$(rss 64 5); long=$(rss 64 "$LONG")
    python3 -c "import sys; s,l,n=map(int,sys.argv[1:]); print(f'- 64 connections: {s/1024:.1f} MiB after 5 s, {l/1024:.1f} MiB after {n} s ({(l-s)*100/s:+.1f}%)')" "$short" "$long" "$LONG"
fi
stop_servers
fi
