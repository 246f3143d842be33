//! HTTP/3 (RFC 9114) over QUIC, being built (issue 26): its frames ([`frame`], with QUIC's
//! variable-length integers) and QPACK header compression ([`qpack`], RFC 9204, with no
//! dynamic table) — sans-IO codecs, each rule they check named with its error code. The QUIC
//! transport (quinn-proto on a UDP engine), the client and the built-in server are not built
//! yet; `docs/protocols.md` lists what is.

pub mod client;
pub mod frame;
pub mod qpack;
pub mod server;
pub mod stream;
