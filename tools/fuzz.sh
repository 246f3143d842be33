#!/usr/bin/env bash
# Fuzz every cargo-fuzz target in fuzz/ (or those named: tools/fuzz.sh server_ws client_nsq)
# for RUNS executions each (default 10 million) or SECONDS_EACH seconds, whichever ends first
# (default 0: no time bound), with inputs up to MAX_LEN bytes (default 1 MiB;
# a few bytes of input can also stand for a stream of up to 2 MiB: `props::expand`), growing
# the corpus kept in fuzz/corpus/ (which `cargo test` replays). Prints, per target, the
# executions done and any finding; a finding fails the script and is left in fuzz/artifacts/.
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a nightly toolchain, or the stable one
# with RUSTC_BOOTSTRAP=1. No sanitizer: the codecs are safe Rust, and this keeps it fast.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${RUNS:-10000000}"
MAX_LEN="${MAX_LEN:-1048576}"
SECONDS_EACH="${SECONDS_EACH:-0}"
if rustup toolchain list 2>/dev/null | grep -q nightly; then
    fuzz=(cargo +nightly fuzz)
else
    export RUSTC_BOOTSTRAP=1
    fuzz=(cargo fuzz)
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <("${fuzz[@]}" list)
# Built first, so that a target's time bound is its fuzzing's alone.
"${fuzz[@]}" build -s none -O "${targets[@]}" >/dev/null 2>&1 || "${fuzz[@]}" build -s none -O
# libFuzzer looks at the clock between inputs: one input that runs a minute past the bound is a
# defect too (a codec should take milliseconds on 2 MiB), stopped here and reported as one.
bound=()
[ "$SECONDS_EACH" -gt 0 ] && bound=(timeout -s INT $((SECONDS_EACH + 60)))
for target in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$target"
    started=$(date +%s)
    out=$("${bound[@]}" "${fuzz[@]}" run -s none -O "$target" "fuzz/corpus/$target" -- \
        -runs="$RUNS" -max_total_time="$SECONDS_EACH" -max_len="$MAX_LEN" -print_final_stats=1 2>&1) && rc=0 || rc=$?
    if [ "$rc" -eq 124 ]; then
        echo "$out" | tail -5
        echo "$target: SLOW INPUT: still running a minute past its ${SECONDS_EACH}s bound (one input ran that long; gdb -p on the fuzzer shows where)"
        exit 1
    elif [ "$rc" -ne 0 ]; then
        echo "$out" | tail -30
        echo "$target: FINDING (see fuzz/artifacts/$target)"
        exit 1
    fi
    runs=$(echo "$out" | sed -n 's/^stat::number_of_executed_units: *//p')
    cov=$(echo "$out" | grep -o 'cov: [0-9]*' | tail -1)
    echo "$target: $runs executions in $(( $(date +%s) - started ))s, $cov, corpus $(ls "fuzz/corpus/$target" | wc -l) inputs, no finding"
done
