#!/usr/bin/env bash
# Fuzz every fuzz target of the registry (one folder each in fuzz/corpus/, which
# tests/decoders_random.rs checks against the registry; or those named: tools/fuzz.sh server_ws
# client_nsq), all in the one fuzzer `protocol`, the target chosen by WIREBENCH_FUZZ,
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
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(ls fuzz/corpus)
# Built once, first, and the built fuzzers run directly: a target's time bound is its
# fuzzing's alone, and sources edited meanwhile are not rebuilt into the run.
"${fuzz[@]}" build -s none -O >/dev/null
bin="fuzz/target/$(rustc -vV | sed -n 's/^host: //p')/release"
# One input that runs for SLOW seconds (default 20) is a defect too — a codec takes
# milliseconds on 2 MiB: libFuzzer's -timeout stops it and keeps the input in fuzz/artifacts/
# (timeout-*) to replay. The outer bound is a last guard for a fuzzer that stops answering.
SLOW="${SLOW:-20}"
bound=()
[ "$SECONDS_EACH" -gt 0 ] && bound=(timeout -s INT $((SECONDS_EACH + SLOW + 60)))
for target in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$target" "fuzz/artifacts/$target"
    started=$(date +%s)
    out=$(WIREBENCH_FUZZ="$target" "${bound[@]}" "$bin/protocol" "fuzz/corpus/$target" -artifact_prefix="fuzz/artifacts/$target/" \
        -runs="$RUNS" -max_total_time="$SECONDS_EACH" -max_len="$MAX_LEN" -timeout="$SLOW" \
        -print_final_stats=1 2>&1) && rc=0 || rc=$?
    if [ "$rc" -eq 124 ]; then
        echo "$out" | tail -5
        echo "$target: STUCK: the fuzzer still ran a minute past its bounds"
        exit 1
    elif echo "$out" | grep -q 'ERROR: libFuzzer: timeout'; then
        echo "$out" | grep -A3 'ERROR: libFuzzer: timeout' | head -5
        echo "$target: SLOW INPUT: one input ran over ${SLOW}s (kept in fuzz/artifacts/$target/timeout-*;" \
            "replay: WIREBENCH_FUZZ=$target cargo +nightly fuzz run protocol fuzz/artifacts/$target/timeout-*)"
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
