//! Fuzz target `hpack`: HPACK's decoder on arbitrary header blocks (`wirebench::props`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench::props::run("hpack", data));
