//! Fuzz target `server_nsq_http`: the properties of `wirebench::props` on arbitrary bytes.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench::props::run("server_nsq_http", data));
