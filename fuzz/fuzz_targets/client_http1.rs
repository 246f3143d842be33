//! Fuzz target `client_http1`: the properties of `wirebench::proto::props` on arbitrary bytes.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench::proto::props::run("client_http1", data));
