//! Fuzz target `h3`: HTTP/3's frames and QPACK on arbitrary bytes (`wirebench::props`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench::props::run("h3", data));
