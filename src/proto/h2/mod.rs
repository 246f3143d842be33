//! HTTP/2 (RFC 9113), being built: so far HPACK ([`hpack`], RFC 7541) with its Huffman code
//! ([`huffman`]) — the header compression whose bytes per request differ between the first
//! request on a connection and the ones after it. The framing, streams as operations and flow
//! control come next (the connection machine's ledger already completes operations by id, in
//! any order: `ClientCodec::op_id` and `answers_op`).

pub mod hpack;
pub mod huffman;
