//! HTTP/2 (RFC 9113), being built: so far its frames ([`frame`]: every rule of §6 on a
//! frame's length, stream and flags checked, each broken one named with its error code) and
//! HPACK ([`hpack`], RFC 7541) with its Huffman code ([`huffman`]) — the header compression
//! whose bytes per request differ between the first request on a connection and the ones
//! after it. The client codec (streams as operations, flow control) comes next (the connection machine's ledger already completes operations by id, in
//! any order: `ClientCodec::op_id` and `answers_op`).

pub mod frame;
pub mod hpack;
pub mod huffman;
