# Sourced by the socket.io studies (tools/sio-study.sh, tools/fleet-study.sh): a scratch
# directory and a trap that stops the server and removes it, free ports, and the servers
# themselves. Needs `here` (this folder), `WB` (the wirebench binary) and `SERVER_CPU`.

work=$(mktemp -d)
server_pid=
cleanup() {
    [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "nothing on port $1" >&2; exit 1; }

# Start server $1 (node2, node4, python, builtin) on port $2 pinned to SERVER_CPU; sets
# server_pid and eio (the Engine.IO version to ask for).
start_server() {
    local port=$2
    case "$1" in
        node2) eio=3; taskset -c "$SERVER_CPU" node "$here/sio_peer.js" "$port" 2 25000 >>"$work/server.log" 2>&1 & ;;
        node4) eio=4; taskset -c "$SERVER_CPU" node "$here/sio_peer.js" "$port" 4 25000 >>"$work/server.log" 2>&1 & ;;
        python) eio=4; taskset -c "$SERVER_CPU" python3 "$here/sio_peer.py" "$port" 25 >>"$work/server.log" 2>&1 & ;;
        builtin) eio=4; "$WB" serve sio --listen "127.0.0.1:$port" --cores "$SERVER_CPU" >>"$work/server.log" 2>&1 & ;;
        *) echo "unknown server $1" >&2; exit 2 ;;
    esac
    server_pid=$!
    wait_port "$port"
}
