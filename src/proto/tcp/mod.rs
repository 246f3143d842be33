//! The floor: bare TCP request/response, the transport every other protocol rides on, carrying
//! the same payload with no protocol at all (netperf's `TCP_RR`; with `--no-keepalive`,
//! `TCP_CRR`: connect, request, response, close). `tcp://HOST:PORT` (and `tls://` over TLS):
//! each operation writes a request of `--size` bytes and reads a response of `--response-size`
//! bytes; `serve tcp` answers. `compare` runs it beside every protocol, so each one's bytes,
//! segments and CPU per operation read as a multiple of the floor's, measured on the same
//! cores in the same run.
//!
//! Its one piece of framing is the client's 8-byte set-up ([`wire`]), reported apart as
//! every protocol's set-up is: an operation's bytes are the two sizes, exactly.

pub mod client;
pub mod fuzz;
pub mod server;
pub mod udp;
pub mod wire;

#[cfg(test)]
mod tests;

pub use client::TcpClient;
pub use server::TcpServer;
pub use udp::UdpServer;

use crate::plan::{CompareRow, Drive, LoadPlan, Payload, Prepared, Protocol, Scheme, Server};
use crate::tls::options::TlsStart;
use anyhow::bail;
use wire::MAX_MESSAGE;

/// The floor's client has almost nothing to break: a server's bytes are a response's,
/// whatever they are (its failures are the transport's: closed, reset, timed out). Over UDP
/// the set-up is answered, by its echo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Error {
    #[error("the server answered the set-up datagram with something else than its echo: is it serve udp?")]
    SetUpRefused,
}

impl super::CodecError for Error {}

/// A response's size: bytes, or as many as the request's (an echo).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponseSize {
    Bytes(u32),
    Echo,
}

impl std::str::FromStr for ResponseSize {
    type Err = String;
    fn from_str(text: &str) -> Result<ResponseSize, String> {
        if text == "echo" {
            return Ok(ResponseSize::Echo);
        }
        match text.parse::<u32>() {
            Ok(n) if (1..=MAX_MESSAGE).contains(&n) => Ok(ResponseSize::Bytes(n)),
            _ => Err(format!("'{text}': give a number of bytes from 1 to {MAX_MESSAGE}, or echo")),
        }
    }
}

/// The floor's load options.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(id = "tcp-options")]
pub struct Options {
    /// tcp://: bytes of each response (default 1, as netperf's TCP_RR; `echo`: as many as the
    /// request's).
    #[arg(long, value_name = "BYTES|echo")]
    pub response_size: Option<ResponseSize>,
    /// tcp://, udp://: send no set-up (the 8 bytes that tell `serve tcp`/`serve udp` the
    /// sizes), for a server given them otherwise: neper's `tcp_rr`/`udp_rr -Q N -R M`.
    #[arg(long)]
    pub no_setup: bool,
}

/// `serve tcp` and `serve udp` have no options of their own: each client's set-up says its
/// sizes.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(id = "tcp-serve-options")]
pub struct ServeOptions {}

/// The response's size for requests of `request` bytes.
fn response_size(plan: &LoadPlan, request: usize) -> u32 {
    match plan.load.options.get::<Options>().response_size.unwrap_or(ResponseSize::Bytes(1)) {
        ResponseSize::Bytes(n) => n,
        ResponseSize::Echo => request as u32,
    }
}

/// Build the floor's client for each target and have `D` drive it.
pub fn run<D: Drive>(p: &Prepared) -> anyhow::Result<crate::stats::Report> {
    D::drive(p, |p| {
        let (request, response) = (p.body.to_vec(), response_size(&p.plan, p.body.len()));
        let client = match p.plan.target.datagrams {
            true => TcpClient::datagrams(request, response),
            false => TcpClient::new(request, response),
        };
        match p.plan.load.options.get::<Options>().no_setup {
            true => client.without_setup(),
            false => client,
        }
    })
}

pub static PROTOCOL: Protocol = Protocol {
    name: "tcp",
    schemes: &[
        Scheme { name: "tcp", default_port: 7000, tls: None, datagrams: false },
        Scheme { name: "tls", default_port: 7443, tls: Some(TlsStart::AtConnect), datagrams: false },
        Scheme { name: "udp", default_port: 7000, tls: None, datagrams: true },
    ],
    // netperf's TCP_RR default: one byte each way.
    default_payload: 1,
    validate,
    check_payload: |plan, body| {
        fits("the request", body.len())?;
        answers_fit(plan, body.len())?;
        if plan.target.datagrams {
            datagram_body_fits(plan, body)?;
        }
        Ok(())
    },
    messages_per_op: crate::plan::one_message,
    compare_rows: |plan| {
        let row = |label: &str, response: ResponseSize, payload_crossings: u8| CompareRow {
            label: label.into(),
            plan: with_response(plan, response),
            payload_crossings,
            versus: None,
            floor: true,
        };
        // The floor under a publish or a request (a 1-byte acknowledgement), and under an echo;
        // over UDP, the floor under QUIC.
        match plan.target.datagrams {
            false => vec![
                row("TCP floor", ResponseSize::Bytes(1), 1),
                row("TCP floor (echo)", ResponseSize::Echo, 2),
            ],
            true => vec![
                row("UDP floor", ResponseSize::Bytes(1), 1),
                row("UDP floor (echo)", ResponseSize::Echo, 2),
            ],
        }
    },
    option_groups: &["tcp-options"],
    http_method: None,
    alpn: None,
    // A response is any bytes: nothing to recognize.
    recognize: crate::plan::recognizes_none,
};

fn validate(plan: &LoadPlan) -> anyhow::Result<()> {
    if !matches!(plan.target.path.as_str(), "" | "/") {
        bail!("{}: a tcp:// URL names a host and port only (tcp://127.0.0.1:7000)", plan.target.url);
    }
    if !plan.load.headers.is_empty() {
        bail!("-H does not apply to tcp:// targets: the floor has no headers");
    }
    if plan.load.requests.is_some() {
        bail!("--requests does not apply to tcp:// targets: the floor sends one request, of --size bytes");
    }
    if let Some(Payload::Size(n)) = plan.load.payload {
        fits("--size", n)?;
        answers_fit(plan, n)?;
    }
    if plan.target.datagrams {
        datagrams_fit(plan)?;
    }
    Ok(())
}

/// A `udp://` request read from `--body-file`: one datagram, and not one `serve udp` would take
/// for a set-up (8 bytes that read as two sizes: it takes a client's set-up again from a port
/// it knows, as a new socket on a reused port sends one).
fn datagram_body_fits(plan: &LoadPlan, body: &[u8]) -> anyhow::Result<()> {
    let url = &plan.target.url;
    if body.len() > udp::MAX_DATAGRAM as usize {
        bail!(
            "{url}: the request is {} bytes: a UDP datagram carries at most {}",
            body.len(),
            udp::MAX_DATAGRAM
        );
    }
    let no_setup = plan.load.options.get::<Options>().no_setup;
    if !no_setup && <&[u8; wire::HELLO_LEN]>::try_from(body).ok().and_then(wire::Sizes::of_hello).is_some() {
        bail!(
            "{url}: this 8-byte request reads as serve udp's set-up (two sizes): give another body, or --no-setup for a server told the sizes"
        );
    }
    Ok(())
}

/// `udp://`'s rules: one transaction in flight per socket (its answers carry no order), on
/// the `uring` engine, each message one datagram.
fn datagrams_fit(plan: &LoadPlan) -> anyhow::Result<()> {
    let url = &plan.target.url;
    if plan.load.engine != crate::plan::EngineKind::Uring {
        bail!(
            "{url}: udp:// runs on --engine uring (its sockets are io_uring's; the async runtimes' are streams)"
        );
    }
    if plan.load.shape.depth > 1 {
        bail!(
            "{url}: UDP_RR keeps one request in flight per socket (an answer names none): --depth 1, more -c"
        );
    }
    if plan.load.shape.per_op {
        bail!("{url}: UDP has no connection to open per transaction (--no-keepalive is TCP_CRR's)");
    }
    if plan.load.unix.is_some() {
        bail!("{url}: --unix-socket carries a byte stream, not datagrams");
    }
    let request = match plan.load.payload {
        Some(Payload::Size(n)) => n,
        _ => PROTOCOL.default_payload,
    };
    for (what, n) in [("--size", request), ("the response", response_size(plan, request) as usize)] {
        if n > udp::MAX_DATAGRAM as usize {
            bail!("{url}: {what} is {n} bytes: a UDP datagram carries at most {}", udp::MAX_DATAGRAM);
        }
    }
    Ok(())
}

/// The answers a connection may have in flight (`--depth` × the response) fit what `serve tcp`
/// writes for one look at the input: past it, the requests left over would wait for more.
fn answers_fit(plan: &LoadPlan, request: usize) -> anyhow::Result<()> {
    let in_flight = plan.load.shape.depth * response_size(plan, request) as usize;
    if in_flight > server::OUT_AT_ONCE {
        bail!(
            "--depth {} × a response of {} bytes is over the {} MiB of answers serve tcp writes at once: lower --depth or --response-size",
            plan.load.shape.depth,
            response_size(plan, request),
            server::OUT_AT_ONCE >> 20
        );
    }
    Ok(())
}

/// A message of `len` bytes fits the floor's set-up (1 byte to 16 MiB).
fn fits(what: &str, len: usize) -> anyhow::Result<()> {
    if len == 0 || len > MAX_MESSAGE as usize {
        bail!("{what} is {len} bytes: the floor's messages are 1 to {MAX_MESSAGE} bytes");
    }
    Ok(())
}

/// The plan with responses of `response`.
fn with_response(plan: &LoadPlan, response: ResponseSize) -> LoadPlan {
    plan.with_options(|o: &mut Options| o.response_size = Some(response))
}

pub static SERVER: Server = Server {
    name: "tcp",
    about: "the floor: bare TCP request/response — after a client's 8-byte set-up (its two sizes), every request of the first size is answered with a response of the second",
    default_listen: "127.0.0.1:7000",
    listeners: |addr, _, _| Ok(vec![(addr, Box::new(TcpServer::default()))]),
    tls: &[TlsStart::AtConnect],
    alpn: None,
    urls: |addrs, tls| addrs.iter().map(|a| format!("{}://{a}/", if tls { "tls" } else { "tcp" })).collect(),
    option_groups: &["tcp-serve-options"],
    quic: false,
    datagrams: None,
};

pub static SERVER_UDP: Server = Server {
    name: "udp",
    about: "the floor over UDP (UDP_RR): a client's 8-byte set-up datagram (its two sizes) is echoed, then every datagram it sends is answered with one of the second size",
    default_listen: "127.0.0.1:7000",
    listeners: |_, _, _| Ok(Vec::new()),
    tls: &[],
    alpn: None,
    urls: |addrs, _| addrs.iter().map(|a| format!("udp://{a}/")).collect(),
    option_groups: &[],
    quic: false,
    datagrams: Some(|_| Ok(Box::new(UdpServer::default()))),
};
