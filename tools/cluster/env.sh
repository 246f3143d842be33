# The test cluster's places and names, sourced by every script here. Nothing of it lives in the
# repository's tree: the built binaries are cached (WB_CLUSTER_CACHE), the cluster's state and
# logs are in WB_CLUSTER_STATE, its sockets in /run/wirebench-cluster.
CACHE="${WB_CLUSTER_CACHE:-/var/cache/wirebench/k8s}"
RUNDIR=/run/wirebench-cluster
STATE="${WB_CLUSTER_STATE:-/var/lib/wirebench-cluster}"
BIN="$CACHE/bin"
PKI="$STATE/pki"
LOGS="$STATE/logs"
# Under /run: gone after a reboot, so a stale PID never names an unrelated process.
PIDS="$RUNDIR/pids"
# The API server's address: a private one added to the loopback interface (these kernels have
# no dummy interfaces), reached by the host and, through the bridge's gateway, by the pods;
# never an address of a real interface, so nothing the cluster serves is reachable from off
# the machine.
API_IP=10.245.0.1
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/24
BRIDGE=wbk-br0
# The kubelet lowercases the node's name; the certificates and lookups use it so too.
NODE=$(hostname | tr '[:upper:]' '[:lower:]')
# The chain of FORWARD rules that keeps the pods' packets on this machine.
FENCE=WB-CLUSTER-FENCE
CONTAINERD_SOCK="$RUNDIR/containerd.sock"
CTR="ctr --address $CONTAINERD_SOCK -n k8s.io"
export KUBECONFIG="$PKI/admin.kubeconfig"
