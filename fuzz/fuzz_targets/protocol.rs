//! The fuzzer of every target in the registry (`wirebench::protocol::fuzz_targets`): the one
//! named by WIREBENCH_FUZZ, checking the properties of `wirebench::props` on arbitrary bytes.
//! `tools/fuzz.sh` runs each with its corpus; by hand:
//! `WIREBENCH_FUZZ=client_ws cargo +nightly fuzz run protocol fuzz/corpus/client_ws`.
#![no_main]

static TARGET: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    std::env::var("WIREBENCH_FUZZ").expect("WIREBENCH_FUZZ names the target, e.g. WIREBENCH_FUZZ=client_ws")
});

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench::protocol::fuzz(&TARGET, data));
