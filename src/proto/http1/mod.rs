//! HTTP/1.1: the request encoder ([`encode_request`]), the client codec ([`client`]), the
//! built-in server and the request reading HTTP servers share ([`server`]), and the head and
//! chunked toolkit the other HTTP-speaking protocols use ([`head`]).
//!
//! Requests are encoded by hand, once, at start-up and copied for every operation; they are
//! minimal unless the user adds headers: `GET /path HTTP/1.1\r\nHost: host:port\r\n\r\n`, with
//! `Content-Length: N` after `Host` when there is a body. Responses and requests are parsed with
//! `httparse`; bodies may be framed by `Content-Length`, by chunked transfer coding, or (responses
//! only) by the end of the connection.

pub mod client;
pub mod fuzz;
pub mod head;
pub mod server;

pub use client::Http1Client;
pub use server::{
    Http1Server, RESPONSE_BUSY, RESPONSE_HELLO, RESPONSE_HELLO_HEAD, RESPONSE_OK, Refusal, Request,
    RequestLimits, RequestReader, parse_request, serve_requests,
};

/// How an HTTP/1.1 server broke the protocol (also what the protocols that speak HTTP for
/// their handshake see of it: [`super::ws::Error::Http`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Error {
    #[error("malformed HTTP response head")]
    BadResponseHead,
    #[error("HTTP status outside 100-599")]
    BadStatus,
    #[error("HTTP response head larger than the limit")]
    ResponseHeadTooLarge,
    #[error("invalid Content-Length")]
    BadContentLength,
    #[error("malformed chunked body")]
    BadChunk,
    #[error("response body larger than the limit")]
    BodyTooLarge,
    #[error("connection closed in the middle of a response")]
    TruncatedResponse,
}

impl super::CodecError for Error {
    fn class(&self) -> crate::outcome::ErrorClass {
        match self {
            // Cut off by the peer's close: counted as the close it is.
            Error::TruncatedResponse => crate::outcome::ErrorClass::Closed,
            _ => crate::outcome::ErrorClass::Protocol,
        }
    }
}

/// A response head larger than this is treated as a broken server rather than buffered forever.
pub const MAX_RESPONSE_HEAD: usize = 64 * 1024;
/// Response bodies are held whole in the connection's read buffer before they are accounted,
/// so they are bounded; 64 MiB is far above what a request/response benchmark returns.
pub const MAX_RESPONSE_BODY: usize = 64 * 1024 * 1024;
/// The built-in server answers 431 to a request head larger than this (nginx's default too).
pub const MAX_REQUEST_HEAD: usize = 8 * 1024;
/// The built-in server answers 413 to a request body larger than this.
pub const MAX_REQUEST_BODY: usize = 16 * 1024 * 1024;

/// What the user asked to send; turned into bytes once by [`encode_request`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSpec {
    pub method: String,
    /// The `Host` header's value, normally `host:port` as written in the URL.
    pub host: String,
    /// Path and query, starting with `/`.
    pub target: String,
    /// Extra headers in the order given; a `Host` here replaces the default one.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Encode one request exactly as it goes on the wire.
pub fn encode_request(spec: &RequestSpec) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + spec.target.len() + spec.body.len());
    out.extend_from_slice(spec.method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(spec.target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let user_host = spec.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("host"));
    let host = user_host.map_or(spec.host.as_str(), |(_, v)| v.as_str());
    push_header(&mut out, "Host", host);
    let user_length = spec.headers.iter().any(|(n, _)| {
        n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("transfer-encoding")
    });
    if !spec.body.is_empty() && !user_length {
        push_header(&mut out, "Content-Length", &spec.body.len().to_string());
    }
    for (name, value) in spec.headers.iter().filter(|(n, _)| !n.eq_ignore_ascii_case("host")) {
        push_header(&mut out, name, value);
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&spec.body);
    out
}

fn push_header(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// How the body of the message being decoded ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Exactly this many bytes follow the head.
    Length(usize),
    /// Chunked transfer coding; `resume` is where the next chunk-size line starts.
    Chunked { resume: usize },
    /// The body runs to the end of the connection (a response with neither length nor chunking).
    UntilEof,
}

// ---------------------------------------------------------------------------------------------
// HTTP/1.1 in the protocol registry: what the layers above need to know.

use crate::plan::{CompareRow, Drive, LoadPlan, Prepared, Protocol, Scheme, Server};

/// HTTP/1.1's load options.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(id = "http1-options")]
pub struct Options {
    /// HTTP: the request method (default GET; compare: POST).
    #[arg(short = 'm', long)]
    pub method: Option<String>,
}

/// Its server's options: none.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(skip)]
pub struct ServeOptions {}

pub static PROTOCOL: Protocol = Protocol {
    name: "http1",
    schemes: &[
        Scheme { name: "http", default_port: 80, tls: None, datagrams: false },
        Scheme {
            name: "https",
            default_port: 443,
            tls: Some(crate::tls::options::TlsStart::AtConnect),
            datagrams: false,
        },
    ],
    default_payload: 0,
    validate,
    check_payload: crate::plan::any_payload,
    messages_per_op: crate::plan::one_message,
    compare_rows,
    option_groups: &["http1-options"],
    http_method: Some(method_of),
    alpn: Some((b"http/1.1", false)),
    recognize: |bytes| {
        (bytes.starts_with(b"HTTP/1.") && bytes.get(9..12).is_none_or(|code| code != b"101"))
            .then_some("HTTP/1.1 (a response)")
    },
};

/// The request method `-m` gives (GET without it), for HTTP/1.1, HTTP/2 and HTTP/3.
pub fn method_of(plan: &LoadPlan) -> String {
    plan.load.options.get::<Options>().method.as_deref().unwrap_or("GET").to_ascii_uppercase()
}

/// The method a prepared plan's requests use: its `--requests` entry's, else `-m`'s.
pub fn method(p: &Prepared) -> String {
    p.method.as_deref().map_or_else(|| method_of(&p.plan), str::to_ascii_uppercase)
}

/// `-m`'s rule, for HTTP/1.1 and HTTP/2 (a `--requests` entry's method keeps the same one).
pub fn validate(plan: &LoadPlan) -> anyhow::Result<()> {
    crate::requests::check_method(&method_of(plan)).map_err(anyhow::Error::msg)
}

/// The request a prepared plan sends.
fn request(p: &Prepared) -> RequestSpec {
    RequestSpec {
        method: method(p),
        host: p.authority().to_string(),
        target: p.plan.target.path.clone(),
        headers: headers(p),
        body: p.body.to_vec(),
    }
}

/// The user's headers, and `Connection: close` with a connection per operation unless the
/// user's own `Connection` header speaks (every HTTP client here: `/pub` too).
pub fn headers(p: &Prepared) -> Vec<(String, String)> {
    let mut headers = p.plan.load.headers.clone();
    if p.plan.load.shape.per_op && !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("connection")) {
        headers.push(("Connection".into(), "close".into()));
    }
    headers
}

/// Build its codec for each target and have `D` drive it.
pub fn run<D: Drive>(p: &Prepared) -> anyhow::Result<crate::stats::Report> {
    D::drive(p, |p| Http1Client::new(&request(p)))
}

/// One row: the payload as a `POST` body (unless `-m` says otherwise).
fn compare_rows(plan: &LoadPlan) -> Vec<CompareRow> {
    vec![post_row(plan, "HTTP/1.1", false)]
}

/// The row of an HTTP version (`HTTP/1.1`, `HTTP/2`) in `compare`: the payload as a `POST`
/// body unless `-m` says otherwise, on its side of the HTTP/2 vs HTTP/1.1 ratio.
pub fn post_row(plan: &LoadPlan, version: &str, numerator: bool) -> CompareRow {
    let plan = plan.with_options(|o: &mut Options| {
        o.method.get_or_insert_with(|| "POST".into());
    });
    CompareRow {
        label: format!("{version} {}", method_of(&plan)),
        plan,
        payload_crossings: 1,
        versus: Some(crate::plan::Versus { title: crate::plan::H2_VS_H1, numerator }),
        floor: false,
    }
}

pub static SERVER: Server = Server {
    name: "http",
    about: "HTTP/1.1 hello world: `Hello World` for GET, `OK` for a request with a body",
    default_listen: "127.0.0.1:8080",
    listeners: |addr, _, _| Ok(vec![(addr, Box::new(Http1Server::default()))]),
    tls: &[crate::tls::options::TlsStart::AtConnect],
    alpn: Some(b"http/1.1"),
    urls: |addrs, tls| addrs.iter().map(|a| format!("http{}://{a}/", if tls { "s" } else { "" })).collect(),
    option_groups: &[],
    quic: false,
    datagrams: None,
};
