#!/usr/bin/env bash
# The test cluster's own PKI (openssl only): a CA, the API server's certificate (for 127.0.0.1,
# the API address and the `kubernetes` Service), a client certificate per component, kubeconfigs.
# Kept across ups (an existing key is not remade).
set -euo pipefail
. "$(dirname "$0")/env.sh"
mkdir -p "$PKI" && cd "$PKI"
[ -f ca.key ] && [ -f ca.crt ] || { openssl genrsa -out ca.key 2048 2>/dev/null; openssl req -x509 -new -key ca.key -days 3650 -subj "/CN=wirebench-cluster-ca" -out ca.crt; }
[ -f sa.key ] || { openssl genrsa -out sa.key 2048 2>/dev/null; openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null; }
# name CN O SANs extendedKeyUsage
mk() {
    local n=$1 cn=$2 o=$3 san=$4 eku=$5 subj
    [ -f "$n.crt" ] && [ -f "$n.key" ] && return
    openssl genrsa -out "$n.key" 2048 2>/dev/null
    subj="/CN=$cn"; [ -n "$o" ] && subj="/O=$o/CN=$cn"
    openssl req -new -key "$n.key" -subj "$subj" -out "$n.csr"
    { echo "basicConstraints=CA:FALSE"; echo "keyUsage=critical,digitalSignature,keyEncipherment"
      echo "extendedKeyUsage=$eku"; [ -n "$san" ] && echo "subjectAltName=$san"; } > "$n.ext"
    openssl x509 -req -in "$n.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -extfile "$n.ext" -out "$n.crt" 2>/dev/null
}
mk apiserver kube-apiserver "" "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,DNS:$NODE,IP:127.0.0.1,IP:$API_IP,IP:10.96.0.1" serverAuth
mk apiserver-kubelet-client kube-apiserver-kubelet-client system:masters "" clientAuth
mk admin kubernetes-admin system:masters "" clientAuth
mk controller-manager system:kube-controller-manager "" "" clientAuth
mk scheduler system:kube-scheduler "" "" clientAuth
mk kubelet-client "system:node:$NODE" system:nodes "" clientAuth
mk kube-proxy system:kube-proxy "" "" clientAuth
mk kubelet-server "$NODE" "" "DNS:$NODE,DNS:localhost,IP:127.0.0.1,IP:$API_IP" serverAuth
kc() {
    cat > "$PKI/$1.kubeconfig" <<EOK
apiVersion: v1
kind: Config
clusters:
- name: wirebench
  cluster: {certificate-authority: $PKI/ca.crt, server: https://$API_IP:6443}
users:
- name: $1
  user: {client-certificate: $PKI/$2.crt, client-key: $PKI/$2.key}
contexts:
- name: wirebench
  context: {cluster: wirebench, user: $1}
current-context: wirebench
EOK
}
kc admin admin; kc controller-manager controller-manager; kc scheduler scheduler
kc kubelet kubelet-client; kc kube-proxy kube-proxy
