#!/usr/bin/env bash
# Take the test cluster down and put the host back as up.sh found it: every workload deleted
# (so the kubelet tears down its sandboxes, network namespaces and mounts), every component
# stopped by the PID it recorded, then what may remain removed — containers, shims, mounts,
# network namespaces, the bridge and the API address, iptables chains (kube-proxy
# --cleanup, then any KUBE-/CNI- chain), cgroups — and the sysctls restored. Says what it
# found left, and exits 1 if anything still is. `--wipe` also deletes the cluster's state
# (etcd, PKI, images; not the cached binaries). Idempotent.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/env.sh"
[ "$(id -u)" = 0 ] || { echo "tools/cluster/down.sh needs root" >&2; exit 2; }
pid() { cat "$PIDS/$1" 2>/dev/null; }
# A recorded PID counts only while it is that component (its command line names it).
alive() { local p; p=$(pid "$1"); [ -n "$p" ] && tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -- "${2:-$1}" >/dev/null; }
stop() {
    local p; p=$(pid "$1"); [ -z "$p" ] && return 0
    alive "$1" || { rm -f "$PIDS/$1"; return 0; }
    kill "$p" 2>/dev/null
    for _ in $(seq 40); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$p" 2>/dev/null && kill -9 "$p"
    rm -f "$PIDS/$1"; echo "stopped $1 ($p)"
}
K="$BIN/kubectl"
# 1. Workloads first, while the kubelet can still tear them down properly.
if alive kube-apiserver && alive kubelet; then
    for ns in $("$K" get ns -o jsonpath='{.items[*].metadata.name}' 2>/dev/null); do
        case $ns in kube-system|kube-public|kube-node-lease) continue ;; esac
        "$K" delete deploy,job,pod,svc,cm,sa,role,rolebinding --all -n "$ns" --wait=true --timeout=60s >/dev/null 2>&1
    done
    for _ in $(seq 30); do [ -z "$("$K" get pods -A -o name 2>/dev/null)" ] && break; sleep 1; done
fi
stop kube-proxy
[ -x "$BIN/kube-proxy" ] && "$BIN/kube-proxy" --cleanup >/dev/null 2>&1
stop kube-scheduler; stop kube-controller-manager; stop kubelet
# 2. Whatever the runtime still holds, then the runtime.
if alive containerd; then
    for t in $($CTR tasks ls -q 2>/dev/null); do $CTR tasks kill -s SIGKILL "$t" >/dev/null 2>&1; done
    sleep 1
    for t in $($CTR tasks ls -q 2>/dev/null); do $CTR tasks rm -f "$t" >/dev/null 2>&1; done
    for c in $($CTR containers ls -q 2>/dev/null); do $CTR containers rm "$c" >/dev/null 2>&1; done
fi
stop kube-apiserver; stop etcd; stop containerd
# 3. Shims of our containerd (by its socket in their command line), then every process still
# in the kubelet's cgroups (containers a killed shim leaves running).
for s in $(ps -eo pid=,args= | awk -v sock="$CONTAINERD_SOCK" '/containerd-shim/ && index($0, sock) {print $1}'); do
    kill -9 "$s" 2>/dev/null && echo "killed shim $s"
done
for procs in $(find /sys/fs/cgroup/*/kubepods* /sys/fs/cgroup/kubepods* -name cgroup.procs 2>/dev/null); do
    for p in $(cat "$procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null && echo "killed container process $p"; done
done
sleep 0.5
# 4. Mounts under our places, deepest first.
for m in $(awk '{print $5}' /proc/self/mountinfo | grep -E "^($STATE|$RUNDIR)(/|$)" | sort -r); do
    umount -l "$m" 2>/dev/null && echo "unmounted $m"
done
# 5. Network: the pods' namespaces, the bridge, the API address, iptables.
for n in $(ls /var/run/netns 2>/dev/null | grep '^cni-' | grep -vxF -f "$STATE/host-before.netns" 2>/dev/null); do
    ip netns del "$n" && echo "deleted netns $n"
done
ip link del "$BRIDGE" 2>/dev/null && echo "deleted bridge $BRIDGE"
# The bridge's addresses are free again: a leak of the IPAM's records would use them up.
rm -rf "$STATE/cni-ipam"
ip addr del "$API_IP/32" dev lo 2>/dev/null && echo "deleted $API_IP from lo"
# The chains the cluster made (KUBE-, CNI- and our fence; not those that were there before it),
# with the rules that jump to them.
ours() {
    if [ -s "$STATE/host-before.chains" ]; then grep -E "^($FENCE|KUBE-|CNI-)" | grep -vxF -f "$STATE/host-before.chains"
    else grep -E "^($FENCE|KUBE-|CNI-)"; fi
}
for ipt in iptables ip6tables; do
    for table in filter nat mangle; do
        chains=$($ipt -t $table -S 2>/dev/null | awk '/^-N / {print $2}' | ours | sort -u)
        [ -z "$chains" ] && continue
        $ipt -t $table -S 2>/dev/null | grep -E '^-A ' | while read -r _ chain rest; do
            target=$(echo "$rest" | sed -n 's/.*-j \([^ ]*\).*/\1/p')
            if echo "$chains" | grep -x -- "$target" >/dev/null && ! echo "$chains" | grep -x -- "$chain" >/dev/null; then
                eval "$ipt -t $table -D $chain $rest" 2>/dev/null
            fi
        done
        for chain in $chains; do $ipt -t $table -F "$chain" 2>/dev/null; done
        for chain in $chains; do $ipt -t $table -X "$chain" 2>/dev/null; done
    done
done
# 6. The kubelet's cgroups (each v1 hierarchy), deepest first.
for h in /sys/fs/cgroup/*/; do
    for top in kubepods kubepods.slice k8s.io; do [ -d "$h$top" ] && find "$h$top" -depth -type d -exec rmdir {} \; 2>/dev/null; done
done
# 7. The sysctls as they were.
if [ -f "$STATE/host-before.sysctl" ]; then
    while read -r k _ v; do sysctl -q -w "$k=$v" 2>/dev/null; done < "$STATE/host-before.sysctl" && echo "sysctls restored"
fi
"$here/status.sh" --left; left=$?
# Wiped only when nothing is left: the records of what to clean stay for another try.
if [ "${1:-}" = --wipe ] && [ $left -eq 0 ]; then
    rm -rf "$STATE" "$RUNDIR" && echo "wiped $STATE (the binaries stay cached in $CACHE)"
fi
exit $left
