#!/usr/bin/env bash
# How long headless Chromium takes to load `report --html`'s page of an hour-long run with 1 s
# intervals: a real run with as many intervals (3,600 — what a series keeps — at 10 ms over 36 s,
# `bench --report-every 10ms`), its page written by `report --html`, then ROUNDS loads of it
# with `--dump-dom` (parse, style, layout of every chart) against the same number of loads of an
# empty page (Chromium's own start), alternating; the difference is the page's. Goal: < 2 s.
#
# Usage: tools/report-render-cost.sh   (ROUNDS=5)
set -euo pipefail
ROUNDS=${ROUNDS:-5}
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cargo build --release -q
WB="$root/target/release/wirebench"
CHROMIUM=$(command -v chromium || command -v chromium-browser)
cpus=$(nproc)
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$out"' EXIT
taskset -c $((cpus - 1)) "$WB" serve http --listen 127.0.0.1:18090 --cores $((cpus - 1)) -d 120s >/dev/null &
sleep 1
taskset -c 0 "$WB" bench http://127.0.0.1:18090/ -c 2 --cores 0 --report-every 10ms -d 36s --json "$out/run.json" >/dev/null
"$WB" report "$out/run.json" --html "$out/page.html"
echo '<!DOCTYPE html><html><body></body></html>' >"$out/empty.html"
intervals=$(python3 -c "import json; print(len(json.load(open('$out/run.json'))['series']['intervals']))")
load() {
  local t0 t1
  t0=$(date +%s.%N)
  "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
    --user-data-dir="$out/profile" --dump-dom "file://$1" >/dev/null 2>&1
  t1=$(date +%s.%N)
  python3 -c "print($t1 - $t0)"
}
: >"$out/times"
for _ in $(seq "$ROUNDS"); do
  echo "empty $(load "$out/empty.html")" >>"$out/times"
  echo "page $(load "$out/page.html")" >>"$out/times"
done
echo "$(date -u +%F) $(git log -1 --format=%h): a page of $intervals intervals ($(du -k "$out/page.html" | cut -f1) KiB), $ROUNDS loads each, medians"
python3 - "$out/times" <<'PY'
import sys, statistics
t = {}
for line in open(sys.argv[1]):
    k, v = line.split()
    t.setdefault(k, []).append(float(v))
e, p = statistics.median(t["empty"]), statistics.median(t["page"])
print(f"  empty page {e:.2f} s, the report {p:.2f} s: the report's own {p - e:.2f} s (goal < 2 s)")
PY
