//! WebSocket (RFC 6455): the client's checked upgrade, masked frames and echo decoding, and
//! the built-in echo server.
//!
//! An operation is one data message out and its echo back. A client frame is 2 header bytes,
//! 2 or 8 more for lengths over 125 and 65535, a 4-byte mask key, then the masked payload: a
//! 500-byte message is 2 + 2 + 4 + 500 = 508 bytes, its unmasked echo 504. The upgrade is
//! handshake traffic; pings, pongs and closes are control traffic. This file is the frame
//! format; [`client`] and [`server`] are the two roles.

pub mod client;
pub mod fuzz;
pub mod server;
#[cfg(test)]
mod tests;

pub use client::{Expect, Frame, Session, WsClient, WsSpec};
pub use server::{Echo, Handler, Session as ServerSession, WsServer};

use base64::Engine as _;
use sha1::{Digest, Sha1};

/// How a WebSocket server broke the protocol, in its upgrade (an HTTP exchange) or its frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Error {
    #[error("WebSocket upgrade refused: HTTP {0} instead of 101")]
    UpgradeRefused(u16),
    #[error(
        "WebSocket upgrade without `Upgrade: websocket` / `Connection: Upgrade`, or with an extension not offered"
    )]
    BadUpgrade,
    #[error("wrong Sec-WebSocket-Accept")]
    BadAcceptKey,
    #[error("WebSocket frame with reserved bits set")]
    ReservedBits,
    #[error("the server upgraded, then answered HTTP {0} inside the WebSocket stream")]
    HttpAfterUpgrade(u16),
    #[error("masked frame from the server")]
    MaskedServerFrame,
    #[error("WebSocket frame or message larger than the limit")]
    FrameTooLarge,
    #[error("fragmented or oversized WebSocket control frame")]
    BadControlFrame,
    #[error("WebSocket continuation out of place")]
    BadFragment,
    #[error("unknown WebSocket opcode")]
    BadOpcode,
    #[error("echoed message length differs from the message sent")]
    EchoLength,
    /// The upgrade's answer is not HTTP as it should be.
    #[error(transparent)]
    Http(#[from] super::http1::Error),
}

impl super::CodecError for Error {
    fn class(&self) -> crate::outcome::ErrorClass {
        match self {
            Error::Http(e) => e.class(),
            _ => crate::outcome::ErrorClass::Protocol,
        }
    }
}

const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
pub const OP_CONTINUATION: u8 = 0x0;
pub const OP_TEXT: u8 = 0x1;
pub const OP_BINARY: u8 = 0x2;
pub const OP_CLOSE: u8 = 0x8;
pub const OP_PING: u8 = 0x9;
pub const OP_PONG: u8 = 0xA;
/// Close codes the echo server sends.
pub const CLOSE_NORMAL: u16 = 1000;
pub const CLOSE_PROTOCOL_ERROR: u16 = 1002;
pub const CLOSE_INVALID_DATA: u16 = 1007;
pub const CLOSE_TOO_BIG: u16 = 1009;

/// A Close the server sent, as an answer about its connection (`close 1009`); 1000 is the
/// normal one.
pub const fn close_answer(code: u16) -> crate::outcome::Answer {
    crate::outcome::Answer::of_connection("close", crate::outcome::Code::Number(code), code == CLOSE_NORMAL)
}
/// The echo server's default `--max-message`.
pub const DEFAULT_MAX_MESSAGE: usize = 16 * 1024 * 1024;
/// The client refuses server frames larger than this (they are held whole in the read buffer).
pub(crate) const CLIENT_MAX_FRAME: u64 = 64 * 1024 * 1024;

/// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key`.
pub fn accept_key(key: &[u8]) -> String {
    String::from_utf8_lossy(&accept_octets(key)).into_owned()
}

/// The same, as the 28 octets of its base64 (a SHA-1 is 20 octets): what a client keeps inline
/// until the answer comes, rather than a string of its own on the heap.
pub fn accept_octets(key: &[u8]) -> [u8; 28] {
    let mut sha = Sha1::new();
    sha.update(key);
    sha.update(GUID);
    let mut out = [0; 28];
    let n = base64::engine::general_purpose::STANDARD
        .encode_slice(sha.finalize(), &mut out)
        .expect("20 octets are 28 in base64");
    debug_assert_eq!(n, 28);
    out
}

/// Append a frame header (FIN set) for `len` payload bytes, with `mask` when a client sends.
pub fn write_header(out: &mut Vec<u8>, opcode: u8, len: usize, mask: Option<[u8; 4]>) {
    out.push(0x80 | opcode);
    let mask_bit = if mask.is_some() { 0x80 } else { 0 };
    match len {
        0..=125 => out.push(mask_bit | len as u8),
        126..=65535 => {
            out.push(mask_bit | 126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            out.push(mask_bit | 127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    if let Some(key) = mask {
        out.extend_from_slice(&key);
    }
}

/// Append a whole frame, masked with `mask` when a client sends it.
pub fn write_frame(out: &mut Vec<u8>, opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) {
    let key = mask;
    write_header(out, opcode, payload.len(), key);
    let start = out.len();
    out.extend_from_slice(payload);
    if let Some(key) = key {
        apply_mask(&mut out[start..], key, 0);
    }
}

/// XOR `data` with `key`, as if `data` started `offset` bytes into the payload.
pub fn apply_mask(data: &mut [u8], key: [u8; 4], offset: usize) {
    // Eight bytes at a time with the key rotated to the offset and repeated, then the tail.
    let rotated: [u8; 4] = std::array::from_fn(|i| key[(offset + i) & 3]);
    let word = u64::from_ne_bytes([rotated, rotated].concat().try_into().expect("8 bytes"));
    let mut chunks = data.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let v = u64::from_ne_bytes((&*chunk).try_into().expect("8 bytes")) ^ word;
        chunk.copy_from_slice(&v.to_ne_bytes());
    }
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= rotated[i & 3];
    }
}

/// A frame header parsed from the start of some input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHead {
    pub fin: bool,
    pub rsv: u8,
    pub opcode: u8,
    pub mask: Option<[u8; 4]>,
    pub len: u64,
    /// Header bytes (2 to 14).
    pub head_len: usize,
}

/// Parse a frame header; `None` if it has not all arrived.
pub fn parse_head(input: &[u8]) -> Option<FrameHead> {
    if input.len() < 2 {
        return None;
    }
    let (b0, b1) = (input[0], input[1]);
    let (mut len, mut pos) = (u64::from(b1 & 0x7f), 2);
    if len == 126 {
        len = u64::from(u16::from_be_bytes(input.get(2..4)?.try_into().ok()?));
        pos = 4;
    } else if len == 127 {
        len = u64::from_be_bytes(input.get(2..10)?.try_into().ok()?);
        pos = 10;
    }
    let mask = if b1 & 0x80 != 0 {
        let key: [u8; 4] = input.get(pos..pos + 4)?.try_into().ok()?;
        pos += 4;
        Some(key)
    } else {
        None
    };
    Some(FrameHead { fin: b0 & 0x80 != 0, rsv: (b0 >> 4) & 0x7, opcode: b0 & 0x0f, mask, len, head_len: pos })
}

// ---------------------------------------------------------------------------------------------
// WebSocket in the protocol registry: what the layers above need to know.

use crate::plan::{CompareRow, Drive, LoadPlan, OptionSet, Prepared, Protocol, Scheme, Server};

/// WebSocket's load options.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(id = "ws-options")]
pub struct Options {
    /// WebSocket: send text frames instead of binary ones.
    #[arg(long)]
    pub text: bool,
    /// WebSocket: what answers an operation: `echo` (a message of the same length, checked)
    /// or `any` (any data message: servers that answer in their own words; default echo).
    #[arg(long, value_enum)]
    pub expect: Option<Expect>,
}

/// The echo server's options.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(id = "ws-serve-options")]
pub struct ServeOptions {
    /// ws: largest message accepted (default 16 MiB, at most 1 GiB); a larger one closes with 1009.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub max_message: Option<u64>,
}

pub static PROTOCOL: Protocol = Protocol {
    name: "ws",
    schemes: &[
        Scheme { name: "ws", default_port: 80, tls: None, datagrams: false },
        Scheme {
            name: "wss",
            default_port: 443,
            tls: Some(crate::tls::options::TlsStart::AtConnect),
            datagrams: false,
        },
    ],
    default_payload: 400,
    validate: |_| Ok(()),
    check_payload,
    messages_per_op: crate::plan::one_message,
    compare_rows,
    option_groups: &["ws-options"],
    http_method: None,
    alpn: Some((b"http/1.1", false)),
    recognize: |bytes| bytes.starts_with(b"HTTP/1.1 101 ").then_some("WebSocket (an upgrade's 101)"),
};

fn check_payload(plan: &LoadPlan, body: &[u8]) -> anyhow::Result<()> {
    if plan.load.options.get::<Options>().text && std::str::from_utf8(body).is_err() {
        anyhow::bail!("--text needs a UTF-8 message; the body is not");
    }
    Ok(())
}

/// Build its codec for each target and have `D` drive it.
pub fn run<D: Drive>(p: &Prepared) -> anyhow::Result<crate::stats::Report> {
    D::drive(p, codec)
}

fn codec(p: &Prepared) -> WsClient {
    let options = p.plan.load.options.get::<Options>();
    let spec = WsSpec {
        host: p.authority().to_string(),
        path: p.plan.target.path.clone(),
        headers: p.plan.load.headers.clone(),
        message: p.body.to_vec(),
        text: options.text,
        expect: options.expect.unwrap_or_default(),
    };
    WsClient::new(spec)
}

/// One row: the payload echoed, so it crosses the wire twice.
fn compare_rows(plan: &LoadPlan) -> Vec<CompareRow> {
    let kind = if plan.load.options.get::<Options>().text { "text" } else { "binary" };
    vec![CompareRow {
        label: format!("WebSocket {kind}"),
        plan: plan.clone(),
        payload_crossings: 2,
        versus: None,
        floor: false,
    }]
}

pub static SERVER: Server = Server {
    name: "ws",
    about: "WebSocket echo: validates the upgrade, echoes every data message with its opcode, answers ping, completes the close handshake",
    default_listen: "127.0.0.1:9001",
    tls: &[crate::tls::options::TlsStart::AtConnect],
    listeners: |addr, options: &OptionSet, _| {
        let max = options.get::<ServeOptions>().max_message.map_or(DEFAULT_MAX_MESSAGE, |m| m as usize);
        Ok(vec![(addr, Box::new(WsServer::new(max)))])
    },
    alpn: Some(b"http/1.1"),
    urls: |addrs, tls| addrs.iter().map(|a| format!("ws{}://{a}/", if tls { "s" } else { "" })).collect(),
    option_groups: &["ws-serve-options"],
    quic: false,
    datagrams: None,
};
