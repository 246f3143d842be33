//! HTTP/3 (RFC 9114) over QUIC: `h3://HOST:PORT/PATH`, TLS 1.3 inside
//! QUIC agreed by ALPN `h3`. Its frames ([`frame`], with QUIC's variable-length integers),
//! QPACK header compression ([`qpack`], RFC 9204, with no dynamic table), what each kind of
//! stream carries ([`stream`]), the client's and the built-in server's protocol halves
//! ([`client`], [`server`]) — sans-IO, each rule they check named with its error code. The QUIC
//! transport is `engine::quic` (quinn-proto, sans-IO) on `engine::quic_io` (UDP on io_uring).
//! `docs/protocols.md` lists what is built and what is not.

pub mod client;
pub mod frame;
pub mod fuzz;
pub mod qpack;
pub mod server;
pub mod stream;

use crate::plan::{Drive, LoadPlan, Prepared, Protocol, Scheme, Server};

/// Its load options: none of its own (`-m` is HTTP/1.1's group).
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(skip)]
pub struct Options {}

/// Its server's options: none.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(skip)]
pub struct ServeOptions {}

/// `h3://HOST:PORT/PATH`: HTTP/3 over QUIC (UDP), TLS 1.3 agreed by ALPN `h3`. Each
/// connection keeps `--depth` requests (streams) in flight.
pub static PROTOCOL: Protocol = Protocol {
    name: "h3",
    schemes: &[Scheme {
        name: "h3",
        default_port: 443,
        tls: Some(crate::tls::options::TlsStart::InQuic),
        datagrams: false,
    }],
    default_payload: 0,
    validate,
    check_payload: super::h2::any_payload,
    messages_per_op: crate::plan::one_message,
    compare_rows,
    option_groups: &["http1-options"],
    http_method: Some(super::http1::method_of),
    alpn: Some((b"h3", true)),
    recognize: crate::plan::recognizes_none,
};

/// One row, on `compare --tls`: the payload as a `POST` body (unless `-m` says otherwise),
/// beside HTTP/1.1's and HTTP/2's over TLS.
fn compare_rows(plan: &LoadPlan) -> Vec<crate::plan::CompareRow> {
    let mut row = super::http1::post_row(plan, "HTTP/3", false);
    row.versus = None;
    vec![row]
}

/// `-m`'s rule, and QUIC's TLS: refused before the run, one line.
fn validate(plan: &LoadPlan) -> anyhow::Result<()> {
    super::http1::validate(plan)?;
    if plan.load.tls.tls_version == Some(crate::tls::options::TlsVersion::V12) {
        anyhow::bail!("h3:// is TLS 1.3 only (QUIC carries no other): drop --tls-version 1.2");
    }
    Ok(())
}

/// Build its client for each target and have `D`'s QUIC engine drive it.
pub fn run<D: Drive<Streams = client::H3Client>>(p: &Prepared) -> anyhow::Result<crate::stats::Report> {
    D::drive_quic(p, |p| {
        let spec = crate::proto::h2::client::RequestSpec {
            method: super::http1::method(p),
            scheme: "https",
            authority: p.authority().to_string(),
            path: p.plan.target.path.clone(),
            headers: p.plan.load.headers.clone(),
            body: p.body.to_vec(),
            grpc: false,
        };
        client::H3Client::new(&spec, true)
    })
}

/// `serve h3`: HTTP/3 over QUIC (UDP), always TLS (without `--tls`/`--cert`, a self-signed
/// certificate as `serve --tls` makes), answering as `serve http` does.
pub static SERVER: Server = Server {
    name: "h3",
    about: "HTTP/3 over QUIC (UDP, TLS always): `Hello World` for GET, `OK` for a request with a body",
    default_listen: "127.0.0.1:8443",
    listeners: |_, _, _| Ok(Vec::new()),
    tls: &[crate::tls::options::TlsStart::InQuic],
    alpn: Some(b"h3"),
    urls: |addrs, _| addrs.iter().map(|a| format!("h3://{a}/")).collect(),
    option_groups: &[],
    quic: true,
    datagrams: None,
};
