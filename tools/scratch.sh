# Sourced by the measuring scripts (tools/vs-peers.sh, tools/scale.sh, tools/engines.sh): a
# scratch directory and a trap that stops every process they started (their PIDs in `pids`)
# and removes it; a free loopback port; waiting for a port to listen; a process's CPU time;
# the CPUs to pin to; this tree's build.

work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# Clients on the first CPU, servers on the last, unless the caller (or the environment) chose.
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-$(($(nproc) - 1))}

# This tree's release build as $WB, built now (run from the repository root).
build_wirebench() {
    cargo build --release -q
    WB="$PWD/target/release/wirebench"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# A UDP server has no port to connect to: wait for the "listening" line it writes to FILE.
wait_listening() { for _ in $(seq 100); do grep -q listening "$1" 2>/dev/null && return 0; sleep 0.05; done; echo "no listening line in $1" >&2; exit 1; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "nothing on port $1" >&2; exit 1; }

# CPU seconds (user + system) used so far by the processes given and their children (nginx's
# workers).
proc_cpu() {
    local total=0 pid
    for pid in "$@" $(for p in "$@"; do pgrep -P "$p"; done); do
        total=$(awk -v t="$total" '{print t + $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo "$total")
    done
    python3 -c "import os,sys; print(float(sys.argv[1]) / os.sysconf('SC_CLK_TCK'))" "$total"
}

# The path of benches/$1.rs's release binary, built if it is not (run from the repository root).
bench_binary() {
    local bin
    bin=$(cargo bench --bench "$1" --no-run 2>&1 | sed -n "s/.*(\(target\/release\/deps\/$1-[0-9a-f]*\)).*/\1/p" | tail -1)
    [[ -x $bin ]] || { echo "no $1 bench binary" >&2; exit 2; }
    echo "$PWD/$bin"
}

# nginx with one worker on $SERVER_CPU answering "Hello World" at 127.0.0.1:$1; $2 is tls, h2c or
# h2tls (over TLS it wants $work/cert.pem and key.pem). Each port its own directory: two may run.
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
start_nginx() {
    local port=$1 listen="" server=""
    case "${2:-}" in
        tls | h2tls)
            listen=ssl
            server="ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem; ssl_protocols TLSv1.3;"
            ;;
    esac
    # HTTP/2: with prior knowledge in cleartext (h2c), by ALPN over TLS.
    case "${2:-}" in h2c | h2tls) listen="$listen http2" ;; esac
    local dir="$work/nginx-$port"
    mkdir -p "$dir"
    cat >"$dir/nginx.conf" <<CONF
worker_processes 1;
daemon off;
user root;
pid $dir/nginx.pid;
error_log $dir/error.log;
worker_rlimit_nofile 30000;
events { worker_connections 20000; }
http { access_log off; keepalive_requests 1000000000; default_type text/plain;
  server { listen 127.0.0.1:$port $listen; $server location / { return 200 "Hello World"; } } }
CONF
    taskset -c "$SERVER_CPU" "$NGINX" -c "$dir/nginx.conf" -p "$dir" &
    pids+=($!)
    wait_port "$port"
}
