#!/usr/bin/env bash
# Say what of the test cluster runs (each component by its recorded PID, the node, the pods), or
# with --left, what of it is left on the host after down.sh: processes, mounts, network
# namespaces, interfaces, iptables chains. Exit 0 when up (or, with --left, when nothing is
# left), 1 otherwise.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/env.sh"
if [ "${1:-}" = --left ]; then
    left=()
    for n in etcd containerd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
        p=$(cat "$PIDS/$n" 2>/dev/null) && tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -- "$n" >/dev/null && left+=("process $n ($p)")
    done
    c=$(find /sys/fs/cgroup/*/kubepods* /sys/fs/cgroup/kubepods* -maxdepth 0 2>/dev/null | wc -l); [ "$c" -gt 0 ] && left+=("$c kubepods cgroups")
    ps -eo args= | grep -v grep | grep -q "containerd-shim.*$CONTAINERD_SOCK" && left+=("containerd shims")
    m=$(awk '{print $5}' /proc/self/mountinfo | grep -cE "^($STATE|$RUNDIR)(/|$)"); [ "$m" -gt 0 ] && left+=("$m mounts")
    ip link show "$BRIDGE" >/dev/null 2>&1 && left+=("bridge $BRIDGE")
    ip addr show dev lo | grep -q " $API_IP/" && left+=("address $API_IP on lo")
    n=$(ls /var/run/netns 2>/dev/null | grep '^cni-' | grep -cvxF -f "$STATE/host-before.netns" 2>/dev/null); [ "${n:-0}" -gt 0 ] && left+=("$n network namespaces")
    before="$STATE/host-before.chains"; [ -s "$before" ] || before=/dev/null
    c=$( { iptables-save 2>/dev/null; ip6tables-save 2>/dev/null; } | awk '/^:/ {print substr($1, 2)}' | grep -E "^($FENCE|KUBE-|CNI-)" | grep -cvxF -f "$before")
    [ "${c:-0}" -gt 0 ] && left+=("$c iptables chains of the cluster")
    if [ ${#left[@]} -eq 0 ]; then echo "cluster: down, nothing left on the host"; exit 0; fi
    echo "cluster: left on the host: ${left[*]}"; exit 1
fi
up=0
for n in etcd containerd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
    p=$(cat "$PIDS/$n" 2>/dev/null) && tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -- "$n" >/dev/null && { printf '%-24s running (pid %s)\n' "$n" "$p"; up=$((up + 1)); } || printf '%-24s not running\n' "$n"
done
[ "$up" -eq 7 ] || { echo "cluster: not up ($up of 7 components run; tools/cluster/up.sh)"; exit 1; }
"$BIN/kubectl" get nodes -o wide && "$BIN/kubectl" get pods -A -o wide
echo "KUBECONFIG=$KUBECONFIG"
