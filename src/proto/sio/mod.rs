//! Socket.IO over WebSocket (Engine.IO 4, socket.io 3 and 4; and Engine.IO 3, socket.io 1 and
//! 2): the packet format here, the client ([`client`]) and the built-in server ([`server`]),
//! both on the WebSocket sessions of [`super::ws`].
//!
//! Every WebSocket text message is one Engine.IO packet: a type digit (`0` open, `1` close,
//! `2` ping, `3` pong, `4` message, `6` noop) and its data. A `4` carries one Socket.IO packet:
//! a type digit (`0` CONNECT, `1` DISCONNECT, `2` EVENT, `3` ACK, `4` CONNECT_ERROR, `5`/`6`
//! binary), then the namespace and a comma unless it is `/`, then an acknowledgement id, then
//! JSON. An event with id 0 on `/` is `420["message","…"]`; its acknowledgement `430[…]`.
//! Engine.IO 4 servers ping and clients answer; under Engine.IO 3 clients ping every ping
//! interval and the server answers, and the server joins `/` on its own after the open packet.

pub mod client;
pub mod fuzz;
pub mod server;
#[cfg(test)]
mod tests;

pub use client::{SioClient, SioSpec};
pub use server::{SioHandler, SioServer};

/// How a Socket.IO server broke the protocol, in its packets or in the WebSocket under them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Error {
    #[error("malformed Engine.IO or Socket.IO packet")]
    BadSioPacket,
    #[error("malformed JSON in a Socket.IO packet")]
    BadJson,
    #[error("acknowledgement with a wrong id (not the operation in flight)")]
    WrongAckId,
    #[error("the server refused the namespace (CONNECT_ERROR)")]
    SioConnectError,
    #[error("binary Socket.IO packets are not supported")]
    BinaryPacket,
    #[error("an event larger than the server's maxPayload")]
    OversizePacket,
    #[error("the server announced a heartbeat too short to keep")]
    SioTiming,
    #[error(transparent)]
    Ws(#[from] super::ws::Error),
}

impl super::CodecError for Error {
    fn class(&self) -> crate::outcome::ErrorClass {
        match self {
            Error::Ws(e) => e.class(),
            _ => crate::outcome::ErrorClass::Protocol,
        }
    }
}

pub const EIO_OPEN: u8 = b'0';
pub const EIO_CLOSE: u8 = b'1';
pub const EIO_PING: u8 = b'2';
pub const EIO_PONG: u8 = b'3';
pub const EIO_MESSAGE: u8 = b'4';
pub const EIO_NOOP: u8 = b'6';
pub const SIO_CONNECT: u8 = b'0';
pub const SIO_DISCONNECT: u8 = b'1';
pub const SIO_EVENT: u8 = b'2';
pub const SIO_ACK: u8 = b'3';
pub const SIO_CONNECT_ERROR: u8 = b'4';
pub const SIO_BINARY_EVENT: u8 = b'5';
pub const SIO_BINARY_ACK: u8 = b'6';
/// The Engine.IO path socket.io servers answer on by default.
pub const DEFAULT_PATH: &str = "/socket.io/";
/// Acknowledgement ids longer than this are not numbers a server sends.
const MAX_ID_DIGITS: usize = 18;

/// One Socket.IO packet, borrowed from the Engine.IO message that carried it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Its type digit (`b'0'` … `b'6'`).
    pub kind: u8,
    /// Its namespace (`/` when none was written).
    pub nsp: &'a str,
    pub id: Option<u64>,
    /// The JSON that follows (may be empty).
    pub data: &'a [u8],
}

/// Parse the Socket.IO packet in an Engine.IO message's data (after the `4`).
pub fn parse_packet(p: &[u8]) -> Result<Packet<'_>, Error> {
    let (&kind, mut rest) = p.split_first().ok_or(Error::BadSioPacket)?;
    if !(b'0'..=b'6').contains(&kind) {
        return Err(Error::BadSioPacket);
    }
    if kind == SIO_BINARY_EVENT || kind == SIO_BINARY_ACK {
        return Err(Error::BinaryPacket);
    }
    let mut nsp = "/";
    if rest.first() == Some(&b'/') {
        let end = rest.iter().position(|&b| b == b',').unwrap_or(rest.len());
        nsp = std::str::from_utf8(&rest[..end]).map_err(|_| Error::BadSioPacket)?;
        rest = rest.get(end + 1..).unwrap_or_default();
    }
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits > MAX_ID_DIGITS {
        return Err(Error::BadSioPacket);
    }
    let id = (digits > 0).then(|| rest[..digits].iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')));
    Ok(Packet { kind, nsp, id, data: &rest[digits..] })
}

/// What a namespace adds after a packet's type: nothing for `/`, else `/ns,`.
pub fn nsp_part(nsp: &str) -> String {
    if nsp == "/" { String::new() } else { format!("{nsp},") }
}

/// `["event",arg]` as JSON: an event's name and its one argument, the payload as a JSON string
/// (UTF-8 required; `--body-file` bytes that are not are refused before the run).
pub fn event_body(event: &str, payload: &[u8]) -> Vec<u8> {
    let payload = String::from_utf8_lossy(payload);
    serde_json::to_vec(&serde_json::json!([event, payload])).unwrap_or_default()
}

/// The open packet's timing and size, as a server announced them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Open {
    pub ping_interval: std::time::Duration,
    pub ping_timeout: std::time::Duration,
    /// `maxPayload` (Engine.IO 4); `None` when not announced.
    pub max_payload: Option<u64>,
}

/// The shortest ping interval or timeout a client keeps to, and a server announces: a server
/// announcing 0 had the client poll its socket without end (Engine.IO 4's ping timeout) or
/// send nothing but pings (Engine.IO 3's interval). Anything shorter is a broken server.
pub const MIN_PING: std::time::Duration = std::time::Duration::from_millis(10);

/// Parse an open packet's JSON (after the `0`).
pub fn parse_open(json: &[u8]) -> Result<Open, Error> {
    let v: serde_json::Value = serde_json::from_slice(json).map_err(|_| Error::BadJson)?;
    let ms = |name: &str| v.get(name).and_then(serde_json::Value::as_u64).ok_or(Error::BadSioPacket);
    Ok(Open {
        ping_interval: std::time::Duration::from_millis(ms("pingInterval")?),
        ping_timeout: std::time::Duration::from_millis(ms("pingTimeout")?),
        max_payload: v.get("maxPayload").and_then(serde_json::Value::as_u64),
    })
}

// ---------------------------------------------------------------------------------------------
// Socket.IO in the protocol registry: what the layers above need to know.

use crate::plan::{CompareRow, Drive, LoadPlan, OptionSet, Prepared, Protocol, Scheme, Server};
use anyhow::bail;
use std::time::Duration;

/// Socket.IO's load options.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(id = "sio-options")]
pub struct Options {
    /// Socket.IO: the Engine.IO path (default /socket.io/).
    #[arg(long, value_name = "PATH")]
    pub sio_path: Option<String>,
    /// Socket.IO: Engine.IO version, 4 (socket.io 3 and 4, the default) or 3 (socket.io 1 and 2).
    #[arg(long, value_parser = clap::value_parser!(u8).range(3..=4))]
    pub eio: Option<u8>,
    /// Socket.IO: complete each event when the server emits this event, instead of by its
    /// acknowledgement (the ask/answer pattern).
    #[arg(long, value_name = "NAME")]
    pub reply_event: Option<String>,
}

/// The built-in server's options.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(id = "sio-serve-options")]
pub struct ServeOptions {
    /// sio: Engine.IO version served, 4 (the default) or 3.
    #[arg(long = "eio", id = "serve_eio", value_parser = clap::value_parser!(u8).range(3..=4))]
    #[serde(rename = "serve_eio")]
    pub eio: Option<u8>,
    /// sio: how often the server pings (Engine.IO 4) or expects pings (3); default 25s.
    #[arg(long, value_parser = crate::plan::parse_duration)]
    pub ping_interval: Option<Duration>,
    /// sio: how long past the ping interval a silent client is kept; default 20s.
    #[arg(long, value_parser = crate::plan::parse_duration)]
    pub ping_timeout: Option<Duration>,
    /// sio: also emit this event, with the same arguments, for every event received.
    #[arg(long = "reply-event", id = "serve_reply_event", value_name = "NAME")]
    #[serde(rename = "serve_reply_event")]
    pub reply_event: Option<String>,
}

/// The default ping interval and timeout of the built-in server (socket.io 4's).
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(25);
pub const DEFAULT_PING_TIMEOUT: Duration = Duration::from_secs(20);

pub static PROTOCOL: Protocol = Protocol {
    name: "sio",
    schemes: &[
        Scheme { name: "sio", default_port: 80, tls: None, datagrams: false },
        Scheme {
            name: "sios",
            default_port: 443,
            tls: Some(crate::tls::options::TlsStart::AtConnect),
            datagrams: false,
        },
    ],
    default_payload: 400,
    validate,
    check_payload: |_, body| {
        if std::str::from_utf8(body).is_err() {
            bail!("Socket.IO carries JSON: the message must be UTF-8; the body is not");
        }
        Ok(())
    },
    messages_per_op: crate::plan::one_message,
    compare_rows: |plan| {
        let label = match &plan.load.options.get::<Options>().reply_event {
            Some(_) => "Socket.IO event+reply",
            None => "Socket.IO event+ack",
        };
        // The payload goes out in the event and comes back in the acknowledgement (or reply).
        vec![CompareRow {
            label: label.into(),
            plan: plan.clone(),
            payload_crossings: 2,
            versus: None,
            floor: false,
        }]
    },
    option_groups: &["sio-options"],
    http_method: None,
    alpn: Some((b"http/1.1", false)),
    // Engine.IO's open packet (`0{…`) in an unmasked text frame.
    recognize: |bytes| {
        (bytes.first() == Some(&0x81) && bytes.get(2..4) == Some(b"0{"))
            .then_some("Socket.IO (Engine.IO's open)")
    },
};

/// The event a URL names (`?event=NAME`; default `message`) and its namespace (its path).
fn event_and_namespace(plan: &LoadPlan) -> (String, String) {
    let (path, query) = plan.target.path.split_once('?').unwrap_or((&plan.target.path, ""));
    let event = form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "event")
        .map_or_else(|| "message".to_string(), |(_, v)| v.into_owned());
    let namespace =
        if path.is_empty() || path == "/" { "/".to_string() } else { path.trim_end_matches('/').to_string() };
    (event, namespace)
}

fn validate(plan: &LoadPlan) -> anyhow::Result<()> {
    let (event, namespace) = event_and_namespace(plan);
    if event.is_empty() {
        bail!("{}: the event name is empty", plan.target.url);
    }
    if namespace.contains(',') {
        bail!("{}: a namespace cannot contain a comma", plan.target.url);
    }
    let options = plan.load.options.get::<Options>();
    let path = options.sio_path.as_deref().unwrap_or(DEFAULT_PATH);
    if !path.starts_with('/') || path.contains(['?', '#', ' ']) {
        bail!("--sio-path '{path}' is not a path: use e.g. /socket.io/");
    }
    Ok(())
}

/// Build its codec for each target and have `D` drive it.
pub fn run<D: Drive>(p: &Prepared) -> anyhow::Result<crate::stats::Report> {
    D::drive(p, codec)
}

fn codec(p: &Prepared) -> SioClient {
    let (event, namespace) = event_and_namespace(&p.plan);
    let options = p.plan.load.options.get::<Options>();
    let eio = options.eio.unwrap_or(4);
    let path = options.sio_path.as_deref().unwrap_or(DEFAULT_PATH);
    let spec = SioSpec {
        host: p.authority().to_string(),
        path: format!("{path}?EIO={eio}&transport=websocket"),
        headers: p.plan.load.headers.clone(),
        namespace,
        body: event_body(&event, &p.body),
        reply_event: options.reply_event.clone(),
        eio,
        depth: p.plan.load.shape.depth,
    };
    SioClient::new(spec)
}

pub static SERVER: Server = Server {
    name: "sio",
    about: "Socket.IO (Engine.IO 4, or 3 with --eio 3): acknowledges every event with its arguments, emits --reply-event when asked, pings",
    default_listen: "127.0.0.1:3000",
    tls: &[crate::tls::options::TlsStart::AtConnect],
    listeners: |addr, options: &OptionSet, _| {
        let o = options.get::<ServeOptions>();
        for (flag, value) in [("--ping-interval", o.ping_interval), ("--ping-timeout", o.ping_timeout)] {
            if value.is_some_and(|v| v < MIN_PING) {
                bail!(
                    "{flag} must be at least {MIN_PING:?}: a shorter one has clients do nothing but heartbeats"
                );
            }
        }
        let handler = SioHandler::new(
            o.eio.unwrap_or(4),
            o.ping_interval.unwrap_or(DEFAULT_PING_INTERVAL),
            o.ping_timeout.unwrap_or(DEFAULT_PING_TIMEOUT),
            o.reply_event.clone(),
        );
        Ok(vec![(addr, Box::new(SioServer::with(handler, server::MAX_MESSAGE)))])
    },
    alpn: Some(b"http/1.1"),
    urls: |addrs, tls| addrs.iter().map(|a| format!("sio{}://{a}/", if tls { "s" } else { "" })).collect(),
    option_groups: &["sio-serve-options"],
    quic: false,
    datagrams: None,
};
