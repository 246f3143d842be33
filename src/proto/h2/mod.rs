//! HTTP/2 (RFC 9113): `h2c://` (cleartext, prior knowledge) and `h2://` (TLS, ALPN `h2`), and
//! gRPC over it ([`grpc`]). Its client ([`client`]: a stream per operation, answered in any
//! order — the connection machine's ledger finds each by its id — bodies sent under the
//! server's flow control, each stream's bytes counted by layer), its frames ([`frame`]: every
//! rule of §6 on a frame's length, stream and flags checked, each broken one named with its
//! error code; header blocks assembled from their pieces), HPACK ([`hpack`], RFC 7541) with
//! its Huffman code ([`huffman`](mod@huffman)) — the header compression whose bytes per request differ
//! between the first request on a connection and the ones after it — and the built-in server
//! ([`server`]). `docs/protocols.md` says what each costs on the wire.

pub mod client;
pub mod frame;
pub mod fuzz;
pub mod grpc;
pub mod hpack;
pub mod huffman;
pub mod request;
pub mod server;

pub use grpc::{PROTOCOL as GRPC, run as run_grpc};

use crate::plan::{Drive, LoadPlan, Prepared, Protocol, Scheme, Server};

/// HTTP/2's load options (gRPC's too).
#[derive(Debug, Clone, Copy, Default, clap::Args, serde::Serialize)]
#[group(id = "h2-options")]
pub struct Options {
    /// HTTP/2 and gRPC: whether HPACK codes header strings with Huffman's code when that is
    /// shorter (`on`, as browsers and h2load do; the default) or sends them as they are (`off`),
    /// to see what it saves.
    #[arg(long, value_enum, value_name = "ON|OFF")]
    pub huffman: Option<Switch>,
    /// HTTP/2 and gRPC: the receive window this side grants, in bytes, for each stream
    /// (SETTINGS_INITIAL_WINDOW_SIZE) and, when above 65,535, for the connection too (a
    /// WINDOW_UPDATE after the preface raises it: a connection's window never starts below
    /// 65,535, RFC 9113 §6.9.2); room is given back once half of it is used. Default 65,535,
    /// RFC 9113's (h2load's `-w 16 -W 16`); at most 2^31-1.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(1..=2_147_483_647))]
    pub window: Option<u32>,
}

/// Its server's options: none.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
#[group(skip)]
pub struct ServeOptions {}

/// A flag's `on` or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Switch {
    On,
    Off,
}

/// Whether the plan asks for Huffman-coded header strings (`--huffman`, on unless `off`).
pub fn huffman(plan: &LoadPlan) -> bool {
    plan.load.options.get::<Options>().huffman != Some(Switch::Off)
}

/// `h2c://HOST:PORT/PATH`: HTTP/2 over cleartext TCP with prior knowledge (no upgrade from
/// HTTP/1.1); `h2://`: over TLS, agreed by ALPN (`h2`). Each connection keeps `--depth`
/// streams in flight (h2load's `-m`).
pub static PROTOCOL: Protocol = Protocol {
    name: "h2",
    schemes: &[
        Scheme { name: "h2c", default_port: 80, tls: None, datagrams: false },
        Scheme {
            name: "h2",
            default_port: 443,
            tls: Some(crate::tls::options::TlsStart::AtConnect),
            datagrams: false,
        },
    ],
    default_payload: 0,
    // The same method option and rule as HTTP/1.1's.
    validate: super::http1::validate,
    check_payload: any_payload,
    messages_per_op: crate::plan::one_message,
    compare_rows,
    option_groups: &["http1-options", "h2-options"],
    http_method: Some(super::http1::method_of),
    alpn: Some((b"h2", true)),
    // A SETTINGS frame on stream 0, its length a multiple of 6: a server's preface.
    recognize: |bytes| match bytes.get(..9) {
        Some([0, hi, lo, 4, _, 0, 0, 0, 0]) if (u16::from(*hi) << 8 | u16::from(*lo)).is_multiple_of(6) => {
            Some("HTTP/2 (its SETTINGS)")
        }
        _ => None,
    },
};

/// One row: the payload as a `POST` body (unless `-m` says otherwise), beside HTTP/1.1's.
fn compare_rows(plan: &LoadPlan) -> Vec<crate::plan::CompareRow> {
    vec![super::http1::post_row(plan, "HTTP/2", true)]
}

/// Any body goes: it is sent under the server's flow control, as its windows allow.
pub fn any_payload(_: &LoadPlan, _: &[u8]) -> anyhow::Result<()> {
    Ok(())
}

/// Build its client for each target and have `D` drive it.
pub fn run<D: Drive>(p: &Prepared) -> anyhow::Result<crate::stats::Report> {
    D::drive(p, |p| client_for(p, super::http1::method(p), p.body.to_vec(), false))
}

/// The HTTP/2 client of a prepared plan: its target's scheme, authority and path, the user's
/// headers and `--huffman`, with this method and body (a gRPC call's: its framed message).
pub fn client_for(p: &Prepared, method: String, body: Vec<u8>, grpc: bool) -> client::H2Client {
    let spec = client::RequestSpec {
        method,
        scheme: if p.plan.target.tls.is_some() { "https" } else { "http" },
        authority: p.authority().to_string(),
        path: p.plan.target.path.clone(),
        headers: p.plan.load.headers.clone(),
        body,
        grpc,
    };
    client::H2Client::new(&spec, huffman(&p.plan)).with_window(p.plan.load.options.get::<Options>().window)
}

/// `serve h2`: h2c with prior knowledge (`h2://` with `--tls`, ALPN `h2`), answering as
/// `serve http` does and echoing gRPC calls on any path.
pub static SERVER: Server = Server {
    name: "h2",
    about: "HTTP/2 (h2c, or h2 over TLS with `serve --tls`): `Hello World` for GET, `OK` for a request with a body, gRPC calls echoed",
    default_listen: "127.0.0.1:8443",
    listeners: |addr, _, _| Ok(vec![(addr, Box::new(server::H2Server::default()))]),
    tls: &[crate::tls::options::TlsStart::AtConnect],
    alpn: Some(b"h2"),
    // HTTP/2 requests and gRPC calls, on the one listener.
    urls: |addrs, tls| {
        let (h2, grpc) = if tls { ("h2", "grpcs") } else { ("h2c", "grpc") };
        let urls = addrs.iter().map(|a| [format!("{h2}://{a}/"), format!("{grpc}://{a}{}", grpc::ECHO_PATH)]);
        urls.flatten().collect()
    },
    option_groups: &[],
    quic: false,
    datagrams: None,
};
