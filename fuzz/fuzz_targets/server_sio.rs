//! Fuzz target `server_sio`: the properties of `wirebench::proto::props` on arbitrary bytes.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench::proto::props::run("server_sio", data));
