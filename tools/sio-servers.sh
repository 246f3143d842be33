# Sourced by the socket.io studies (tools/sio-study.sh, tools/fleet-study.sh): the scratch
# directory, cleanup trap and port helpers of tools/scratch.sh, and the servers themselves.
# Needs `here` (this folder), `WB` (the wirebench binary) and `SERVER_CPU`.

# shellcheck source=tools/scratch.sh
. "$here/scratch.sh"
server_pid=

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
    pids+=("$server_pid") # stopped by the trap if the study does not stop it first
    wait_port "$port"
}
