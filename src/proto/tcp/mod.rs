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
pub mod wire;

#[cfg(test)]
mod tests;

pub use client::TcpClient;
pub use server::TcpServer;

use crate::plan::{CompareRow, Drive, LoadPlan, Payload, Prepared, Protocol, Scheme, Server};
use crate::tls::options::TlsStart;
use anyhow::bail;
use wire::MAX_MESSAGE;

/// The floor's client has nothing to break: a server's bytes are a response's, whatever they
/// are. (Its failures are the transport's: closed, reset, timed out.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Error {}

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
}

/// `serve tcp` has no options of its own: each client's set-up says its sizes.
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
    D::drive(p, |p| TcpClient::new(p.body.to_vec(), response_size(&p.plan, p.body.len())))
}

pub static PROTOCOL: Protocol = Protocol {
    name: "tcp",
    schemes: &[
        Scheme { name: "tcp", default_port: 7000, tls: None },
        Scheme { name: "tls", default_port: 7443, tls: Some(TlsStart::AtConnect) },
    ],
    // netperf's TCP_RR default: one byte each way.
    default_payload: 1,
    validate,
    check_payload: |plan, body| fits("the request", body.len()).and_then(|()| answers_fit(plan, body.len())),
    messages_per_op: crate::plan::one_message,
    compare_rows: |plan| {
        let row = |label: &str, response: ResponseSize, payload_crossings: u8| CompareRow {
            label: label.into(),
            plan: with_response(plan, response),
            payload_crossings,
            versus: None,
            floor: true,
        };
        // The floor under a publish or a request (a 1-byte acknowledgement), and under an echo.
        vec![row("TCP floor", ResponseSize::Bytes(1), 1), row("TCP floor (echo)", ResponseSize::Echo, 2)]
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
};
