//! The protocol registry: what each protocol declares, once, in its own module, for the layers
//! above its codecs — its URL schemes and default ports, its options, how its client codec is
//! built from a plan, its rows in `compare`, its built-in server and its name in reports. The
//! commands and reports ask this registry; they never match on a protocol or compare names.
//!
//! Adding a protocol is a module under `proto/` with its codecs and its [`Protocol`] (and
//! [`Server`]) declaration, plus the registry lines below: its entry in [`PROTOCOLS`] (and
//! [`SERVERS`]), and its option groups in [`ProtocolOptions`] (and [`ServerOptions`]). The
//! recipe, with the exact files, is in `docs/ARCHITECTURE.md`.

use crate::plan::{LoadPlan, Prepared};
use crate::proto::{Ask, Served, ServerCodec, Tell};
use crate::proto::{http1, nsq, sio, ws};
use crate::stats::Report;
use std::net::SocketAddr;

/// A URL scheme a protocol answers to, and the port it means when the URL names none.
#[derive(Debug)]
pub struct Scheme {
    pub name: &'static str,
    pub default_port: u16,
    /// Whether its connections speak TLS: from the connect (`https`), or when the protocol's
    /// handshake upgrades, if the URL's query says `tls=1` (`nsq://…?tls=1`: nsqd's `tls_v1`).
    pub tls: Option<crate::tls::options::TlsStart>,
}

/// Everything the layers above the codecs need to know about one protocol.
pub struct Protocol {
    /// Its name in reports and JSON (`protocol`): `http1`, `ws`, `nsq`, `nsq-http`.
    pub name: &'static str,
    pub schemes: &'static [Scheme],
    /// Payload bytes per operation when neither `--size` nor `--body-file` is given.
    pub default_payload: usize,
    /// Its own rules on a plan aimed at it (pure: no I/O).
    pub validate: fn(&LoadPlan) -> anyhow::Result<()>,
    /// Its rules on the payload, once read (a `--body-file`'s bytes are known only then).
    pub check_payload: fn(&LoadPlan, &[u8]) -> anyhow::Result<()>,
    /// Messages one operation carries (an NSQ batch: N; otherwise 1).
    pub messages_per_op: fn(&LoadPlan) -> u64,
    /// Build its client codec from a prepared plan and drive the engine with it.
    pub run: fn(&Prepared) -> anyhow::Result<Report>,
    /// Its rows in `compare`, from the comparison's plan aimed at its URL.
    pub compare_rows: fn(&LoadPlan) -> Vec<CompareRow>,
}

impl std::fmt::Debug for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for Protocol {
    fn eq(&self, other: &Protocol) -> bool {
        self.name == other.name
    }
}

/// One row of `compare`: a label, the plan it runs, and what the report needs to read it.
#[derive(Debug, Clone)]
pub struct CompareRow {
    pub label: String,
    pub plan: LoadPlan,
    /// How many times a message's payload crosses the wire (a publish: once; an echo: twice).
    pub payload_crossings: u8,
    /// Its side in a "versus" ratio of the footer (the NSQ study's HTTP against TCP).
    pub versus: Option<Versus>,
}

/// A pair of rows whose ratio the comparison prints: the same message over two transports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versus {
    /// What is compared, e.g. `NSQ /pub vs PUB`.
    pub title: &'static str,
    /// This row's side: the HTTP one (numerator) or the TCP one.
    pub http_side: bool,
}

/// A built-in server: `wirebench serve NAME`.
pub struct Server {
    pub name: &'static str,
    /// One line for `serve --help`.
    pub about: &'static str,
    pub default_listen: &'static str,
    /// Its listeners for the main address and the server options (a server may listen on
    /// more than one address: nsq's HTTP side); `tls`: the server serves TLS (the caller wraps
    /// each codec in [`crate::tls::TlsServer`]; a codec that upgrades itself must know).
    pub listeners: fn(SocketAddr, &ServerOptions, bool) -> anyhow::Result<Vec<Listener>>,
    /// With TLS, when each listener's connections start it.
    pub tls: &'static [crate::tls::options::TlsStart],
    /// The target URL of each of its listeners once bound (TLS or not), for `compare` and
    /// `sweep`.
    pub urls: fn(&[SocketAddr], bool) -> Vec<String>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Every protocol. (Registry line: one entry per protocol.)
pub const PROTOCOLS: [&Protocol; 5] =
    [&http1::PROTOCOL, &ws::PROTOCOL, &sio::PROTOCOL, &nsq::PROTOCOL, &nsq::HTTP_PROTOCOL];

/// Every built-in server. (Registry line: one entry per server.)
pub const SERVERS: [&Server; 4] = [&http1::SERVER, &ws::SERVER, &sio::SERVER, &nsq::SERVER];

/// Every protocol's load options, flattened into each command that generates load. (Registry
/// line: one field per option group.)
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ProtocolOptions {
    #[command(flatten)]
    pub http1: http1::Options,
    #[command(flatten)]
    pub ws: ws::Options,
    #[command(flatten)]
    pub sio: sio::Options,
    #[command(flatten)]
    pub nsq: nsq::Options,
}

impl ProtocolOptions {
    /// The options given, each with the protocols it applies to.
    pub fn given(&self) -> Vec<(&'static str, &'static [&'static str])> {
        let groups = [self.http1.given(), self.ws.given(), self.sio.given(), self.nsq.given()];
        groups.into_iter().flatten().collect()
    }
}

/// Every built-in server's options, flattened into `serve`. (Registry line: one field per
/// server that has options.)
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServerOptions {
    #[command(flatten)]
    pub ws: ws::ServeOptions,
    #[command(flatten)]
    pub sio: sio::ServeOptions,
    #[command(flatten)]
    pub nsq: nsq::ServeOptions,
    #[command(flatten)]
    pub tls: crate::tls::options::ServeTlsArgs,
}

impl ServerOptions {
    /// The options given, each with the servers it applies to.
    pub fn given(&self) -> Vec<(&'static str, &'static [&'static str])> {
        [self.ws.given(), self.sio.given(), self.nsq.given()].into_iter().flatten().collect()
    }
}

/// The protocol and scheme a URL's scheme names (any case).
pub fn by_scheme(scheme: &str) -> Option<(&'static Protocol, &'static Scheme)> {
    PROTOCOLS
        .iter()
        .flat_map(|p| p.schemes.iter().map(move |s| (*p, s)))
        .find(|(_, s)| s.name.eq_ignore_ascii_case(scheme))
}

/// The schemes there are, for messages: `http://, ws://, nsq:// or nsq+http://`.
pub fn schemes_text() -> String {
    let names: Vec<String> =
        PROTOCOLS.iter().flat_map(|p| p.schemes.iter().map(|s| format!("{}://", s.name))).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// The URL schemes of the protocols called `names`, for messages: `nsq:// and nsq+http://`.
pub fn schemes_of(names: &[&str]) -> String {
    let schemes: Vec<String> = PROTOCOLS
        .iter()
        .filter(|p| names.contains(&p.name))
        .flat_map(|p| p.schemes.iter().map(|s| format!("{}://", s.name)))
        .collect();
    match schemes.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => schemes.join(""),
    }
}

/// The built-in server called `name`.
pub fn server(name: &str) -> Option<&'static Server> {
    SERVERS.iter().copied().find(|s| s.name == name)
}

/// The built-in servers' names with their one-line descriptions, for `serve`'s argument.
pub fn server_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        SERVERS.iter().map(|s| clap::builder::PossibleValue::new(s.name).help(s.about)),
    )
}

/// A server codec behind a pointer, so that one engine core can serve listeners of different
/// protocols (nsq's TCP and HTTP sides; every protocol at once for `compare`). The call per
/// read through it is one indirect call beside a syscall.
pub type BoxedServer = Box<dyn ServerObject>;

/// A listening address and the codec its connections start from.
pub type Listener = (SocketAddr, BoxedServer);

/// What [`BoxedServer`] can do: a [`ServerCodec`], made object-safe.
pub trait ServerObject: Send {
    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served;
    fn ask(&self, question: Ask<'_>);
    fn tell(&mut self, news: Tell<'_>);
    fn clone_box(&self) -> BoxedServer;
}

impl<S: ServerCodec + Send + 'static> ServerObject for S {
    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served {
        ServerCodec::serve(self, input, out)
    }
    fn ask(&self, question: Ask<'_>) {
        ServerCodec::ask(self, question)
    }
    fn tell(&mut self, news: Tell<'_>) {
        ServerCodec::tell(self, news)
    }
    fn clone_box(&self) -> BoxedServer {
        Box::new(self.clone())
    }
}

impl Clone for BoxedServer {
    fn clone(&self) -> BoxedServer {
        self.as_ref().clone_box()
    }
}

impl ServerCodec for BoxedServer {
    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served {
        self.as_mut().serve(input, out)
    }
    fn ask(&self, question: Ask<'_>) {
        self.as_ref().ask(question)
    }
    fn tell(&mut self, news: Tell<'_>) {
        self.as_mut().tell(news)
    }
}

/// [`Protocol::check_payload`] for protocols that take any bytes.
pub fn any_payload(_: &LoadPlan, _: &[u8]) -> anyhow::Result<()> {
    Ok(())
}

/// An option group's `given()`: the flags that were set, each with the protocols (or servers)
/// it applies to.
pub fn flags_given<const N: usize>(
    flags: [(bool, &'static str); N],
    applies_to: &'static [&'static str],
) -> Vec<(&'static str, &'static [&'static str])> {
    flags.into_iter().filter(|(given, _)| *given).map(|(_, flag)| (flag, applies_to)).collect()
}

/// [`Protocol::messages_per_op`] for protocols that carry one message per operation.
pub fn one_message(_: &LoadPlan) -> u64 {
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scheme_and_name_is_unique_and_found() {
        let mut schemes = std::collections::BTreeSet::new();
        let mut names = std::collections::BTreeSet::new();
        for p in PROTOCOLS {
            assert!(names.insert(p.name), "{} twice", p.name);
            for s in p.schemes {
                assert!(schemes.insert(s.name), "{} twice", s.name);
                assert_eq!(by_scheme(&s.name.to_uppercase()).map(|(q, _)| q.name), Some(p.name));
            }
        }
        assert_eq!(
            schemes_text(),
            "http://, https://, ws://, wss://, sio://, sios://, nsq://, nsq+http:// or nsq+https://"
        );
        assert_eq!(schemes_of(&["nsq", "nsq-http"]), "nsq://, nsq+http:// and nsq+https://");
        for s in SERVERS {
            assert_eq!(server(s.name).map(|s| s.name), Some(s.name));
        }
    }
}
