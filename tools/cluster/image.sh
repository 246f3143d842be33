#!/usr/bin/env bash
# The wirebench image without a daemon or a registry: the release binary, the libraries `ldd`
# lists, a busybox for a shell in the pod, written as an image archive (images/mkimage.py) and
# imported into the test cluster's containerd. Prints the image's name.
#   tools/cluster/image.sh [BINARY] [NAME]   (default: target/release/wirebench, wirebench:dev)
# For a registry, build deploy/k8s/Dockerfile instead.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/env.sh"
bin="${1:-$here/../../target/release/wirebench}"
name="${2:-wirebench:dev}"
[ -x "$bin" ] || { echo "no binary at $bin: cargo build --release first" >&2; exit 2; }
files=("$bin:/usr/local/bin/wirebench")
for lib in $(ldd "$bin" | awk '/=> \// {print $3} /^[ \t]*\// {print $1}'); do
    files+=("$(readlink -f "$lib"):$lib")
done
links=()
if [ -x /bin/busybox ]; then
    files+=("/bin/busybox:/bin/busybox")
    for a in sh cat ls ps sleep; do links+=(--link "bin/$a=busybox"); done
fi
out="$STATE/images/wirebench.tar"
mkdir -p "$STATE/images"
python3 "$here/images/mkimage.py" "$out" "$name" '["/usr/local/bin/wirebench"]' "${files[@]}" "${links[@]}" >/dev/null
$CTR images import "$out" >/dev/null
echo "$name"
