//! Fuzz target `client_nsq`: the properties of `wirebench::props` on arbitrary bytes.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench::props::run("client_nsq", data));
