#!/usr/bin/env bash
# Bring the test cluster up: a real single-node Kubernetes (v1.34, built from the Go module
# proxy by build.sh) on this machine — etcd, containerd + runc + CNI bridge, kube-apiserver,
# controller-manager, scheduler, kubelet (static CPU manager policy) and kube-proxy (iptables).
# Idempotent: a component already running is left as it is. Needs root. `down.sh` undoes it
# all; `status.sh` says what runs. Cold (binaries built) it is up in about 15 s.
#
# The host settings it changes are recorded once, before the first change, and restored by
# down.sh: the sysctls the kubelet and the bridge set, the API address on loopback, the bridge, iptables chains. Pods get a resolv.conf with no nameserver, and the API
# server and kubelet listen only on that private address and loopback: nothing leaves the machine.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/env.sh"
[ "$(id -u)" = 0 ] || { echo "tools/cluster/up.sh needs root (containerd, the kubelet, iptables)" >&2; exit 2; }
t0=$(date +%s)
say() { echo "[cluster +$(( $(date +%s) - t0 ))s] $*"; }

# 1. What it runs on: Debian packages, and the Kubernetes binaries (built once, cached).
missing=()
for p in containerd:containerd runc:runc etcd:etcd-server iptables:iptables conntrack:conntrack \
         socat:socat ebtables:ebtables ethtool:ethtool gcc:gcc openssl:openssl busybox:busybox-static; do
    command -v "${p%%:*}" >/dev/null || missing+=("${p#*:}")
done
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
if [ ${#missing[@]} -gt 0 ]; then
    say "apt: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" libc6-dev >/dev/null
fi
for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
    [ -x "$BIN/$b" ] || { say "building the Kubernetes binaries (4 to 9 minutes on 2 CPUs, once)"; "$here/build.sh"; break; }
done

mkdir -p "$LOGS" "$PIDS" "$STATE/conf/net.d" "$STATE/images" "$RUNDIR"
alive() { [ -s "$PIDS/$1" ] && tr '\0' ' ' < "/proc/$(cat "$PIDS/$1")/cmdline" 2>/dev/null | grep -- "$2" >/dev/null; }
# 2. The host as it is before this cluster starts (down.sh puts it back): taken whenever no
# component of it runs, so it is never older than the last down.
if ! alive etcd etcd && ! alive kubelet kubelet; then
    sysctl -a 2>/dev/null | grep -E '^(kernel\.panic|kernel\.panic_on_oops|vm\.overcommit_memory|vm\.panic_on_oom|net\.ipv4\.ip_forward|net\.ipv4\.conf\.all\.route_localnet|kernel\.keys\.root_maxkeys|kernel\.keys\.root_maxbytes|net\.bridge\.bridge-nf-call-iptables|net\.netfilter\.nf_conntrack_max) ' > "$STATE/host-before.sysctl"
    (ls /var/run/netns 2>/dev/null || true) > "$STATE/host-before.netns"
    # Chains named as the cluster's that were there before it (another's): down.sh keeps them.
    for ipt in iptables ip6tables; do $ipt-save 2>/dev/null | awk '/^:(KUBE-|CNI-)/ {print substr($1, 2)}'; done | sort -u > "$STATE/host-before.chains"
fi

"$here/pki.sh"
# 3. The API address, on loopback; and a fence: pods' packets may go to pods, Services and this
# machine, never forwarded off it (the bridge's gateway would route them out otherwise).
ip addr show dev lo | grep " $API_IP/" >/dev/null || ip addr add "$API_IP/32" dev lo
if ! iptables -S "$FENCE" >/dev/null 2>&1; then
    iptables -N "$FENCE"
    iptables -A "$FENCE" -s "$POD_CIDR" -d 10.244.0.0/16 -j RETURN
    iptables -A "$FENCE" -s "$POD_CIDR" -j DROP
fi
iptables -C FORWARD -j "$FENCE" 2>/dev/null || iptables -I FORWARD -j "$FENCE"

# 4. Configuration, written from env.sh's places — only where it differs: kube-proxy exits when
# its configuration file changes under it (a second up must leave a running cluster alone).
C="$STATE/conf"
put() { local tmp; tmp=$(mktemp); cat > "$tmp"; if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv "$tmp" "$1"; fi; }
echo "# no nameserver: pods of the test cluster ask nothing off this machine" | put "$C/resolv.conf"
put "$C/containerd.toml" <<EOC
version = 2
root = "$STATE/containerd"
state = "$RUNDIR/containerd"
[grpc]
  address = "$CONTAINERD_SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  # Root here may not lower an OOM score: without this every sandbox fails to start.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$(command -v runc)"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$C/net.d"
EOC
put "$C/net.d/10-wirebench.conflist" <<EOC
{"cniVersion": "0.4.0", "name": "wirebench", "plugins": [{
  "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
  "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "dataDir": "$STATE/cni-ipam",
           "routes": [{"dst": "10.244.0.0/16"}, {"dst": "$SERVICE_CIDR"}, {"dst": "$API_IP/32"}]}}]}
EOC
put "$C/kubelet.yaml" <<EOC
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
address: $API_IP
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
authentication: {anonymous: {enabled: false}, webhook: {enabled: true}, x509: {clientCAFile: $PKI/ca.crt}}
authorization: {mode: Webhook}
tlsCertFile: $PKI/kubelet-server.crt
tlsPrivateKeyFile: $PKI/kubelet-server.key
resolvConf: $C/resolv.conf
# Guaranteed pods with whole CPUs get exclusive ones; 100m reserved keeps CPU 0 in the shared pool.
cpuManagerPolicy: static
kubeReserved: {cpu: 100m}
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
serializeImagePulls: false
EOC
put "$C/kube-proxy.yaml" <<EOC
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $PKI/kube-proxy.kubeconfig}
hostnameOverride: $NODE
mode: iptables
clusterCIDR: 10.244.0.0/16
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false, masqueradeAll: false}
EOC

# 5. The sandbox image: a static pause, written as an image archive without a daemon.
if [ ! -f "$STATE/images/pause.tar" ]; then
    gcc -static -Os -o "$STATE/images/pause" "$here/images/pause.c" && strip "$STATE/images/pause"
    python3 "$here/images/mkimage.py" "$STATE/images/pause.tar" registry.k8s.io/pause:3.10 '["/pause"]' "$STATE/images/pause:/pause" >/dev/null
fi

# A component runs when its recorded PID is alive and is that program.
start() { local n=$1; shift; alive "$n" "$1" && return 0; nohup "$@" > "$LOGS/$n.log" 2>&1 & echo $! > "$PIDS/$n"; say "started $n (pid $!)"; }
wait_for() { local what=$1 n=$2; shift 2; for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done; echo "cluster: $what not up in ${n}s (logs: $LOGS)" >&2; exit 1; }

start etcd etcd --name default --data-dir "$STATE/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster default=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381
start containerd containerd --config "$C/containerd.toml"
wait_for containerd 30 test -S "$CONTAINERD_SOCK"
$CTR images import "$STATE/images/pause.tar" >/dev/null
start kube-apiserver "$BIN/kube-apiserver" --bind-address="$API_IP" --advertise-address="$API_IP" --secure-port=6443 \
    --etcd-servers=http://127.0.0.1:2379 \
    --client-ca-file="$PKI/ca.crt" --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$PKI/ca.crt" --kubelet-preferred-address-types=InternalIP \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range="$SERVICE_CIDR" --authorization-mode=Node,RBAC \
    --enable-admission-plugins=NodeRestriction --allow-privileged=true
wait_for kube-apiserver 120 curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "https://$API_IP:6443/readyz"
say "API ready at https://$API_IP:6443"
start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$PKI/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$PKI/controller-manager.kubeconfig" --authorization-kubeconfig="$PKI/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --leader-elect=false --use-service-account-credentials=true \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" --service-cluster-ip-range="$SERVICE_CIDR"
start kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$PKI/scheduler.kubeconfig" \
    --authentication-kubeconfig="$PKI/scheduler.kubeconfig" --authorization-kubeconfig="$PKI/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --leader-elect=false
# A CPU manager state of another policy would stop the kubelet: it is remade at each start.
alive kubelet kubelet || rm -f "$STATE/kubelet/cpu_manager_state"
start kubelet "$BIN/kubelet" --config="$C/kubelet.yaml" --kubeconfig="$PKI/kubelet.kubeconfig" \
    --root-dir="$STATE/kubelet" --node-ip="$API_IP" --hostname-override="$NODE" -v=1
start kube-proxy "$BIN/kube-proxy" --config="$C/kube-proxy.yaml"
wait_for "node $NODE Ready" 120 sh -c "'$BIN/kubectl' get node '$NODE' | grep -q ' Ready'"
# A node short of disk is Ready but tainted (disk-pressure): no pod would schedule, and every
# test would time out waiting for one. Said here, in one line, instead.
if "$BIN/kubectl" get node "$NODE" -o jsonpath='{.spec.taints[*].key}' | grep -q disk-pressure \
    || [ "$(df --output=avail -k "$STATE" | tail -1)" -lt $((2 * 1024 * 1024)) ]; then
    say "error: the disk of $STATE has $(df -h --output=avail "$STATE" | tail -1 | tr -d ' ') left: the kubelet taints its node (disk-pressure) and no pod schedules; free space (old target/ folders, CI clones) and run up.sh again"
    exit 1
fi
# The default ServiceAccount exists once the controller-manager has made it: pods need it.
wait_for "the default ServiceAccount" 60 "$BIN/kubectl" get serviceaccount default
say "up: node $NODE Ready (KUBECONFIG=$KUBECONFIG)"
