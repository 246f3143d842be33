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
use crate::proto::{h2, h3, http1, nsq, sio, ws};
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
    /// The option groups it reads (ids of clap groups in [`ProtocolOptions`]): a load flag
    /// applies to the protocols whose groups hold it.
    pub option_groups: &'static [&'static str],
    /// Whether its operations are HTTP requests whose method, path and headers a `--requests`
    /// entry may set (else an entry is a message: its body).
    pub http_entries: bool,
    /// The protocol it offers by ALPN when TLS starts at the connect, and whether the server
    /// must agree to it (HTTP/2 must be agreed; a server that says nothing speaks HTTP/1.1).
    pub alpn: (&'static [u8], bool),
    /// What a server's first bytes say if they are this protocol's — `HTTP/1.1 (a response)`
    /// — else `None`: the verdict of a run that completed nothing names what the target
    /// seems to speak instead ([`recognize`]; TLS records are recognized beside it).
    pub recognize: fn(&[u8]) -> Option<&'static str>,
}

/// What the first bytes a server sent look like, by the registry's protocols (the first that
/// recognizes them); `None`: none does.
pub fn recognize(bytes: &[u8]) -> Option<&'static str> {
    PROTOCOLS.iter().find_map(|p| (p.recognize)(bytes))
}

/// A protocol that recognizes nothing (its answers look like another's: gRPC's are HTTP/2's).
pub fn recognizes_none(_: &[u8]) -> Option<&'static str> {
    None
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
    /// Its side in a ratio the footer prints (the NSQ study's HTTP against TCP).
    pub versus: Option<Versus>,
}

/// A pair of rows whose ratio the comparison prints: the same message two ways.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versus {
    /// What is compared, e.g. `HTTP vs TCP (NSQ /pub vs PUB)`.
    pub title: &'static str,
    /// This row's side: the numerator (HTTP, HTTP/2) or the denominator (TCP, HTTP/1.1).
    pub numerator: bool,
}

/// The ratio of HTTP/2's bytes and speed to HTTP/1.1's for the same request.
pub const H2_VS_H1: &str = "HTTP/2 vs HTTP/1.1";

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
    /// With TLS, the protocol it agrees to by ALPN (`http/1.1`, `h2`).
    pub alpn: &'static [u8],
    /// The target URL of each of its listeners once bound (TLS or not), for `compare` and
    /// `sweep`.
    pub urls: fn(&[SocketAddr], bool) -> Vec<String>,
    /// The option groups it reads (ids of clap groups in [`ServerOptions`]), as
    /// [`Protocol::option_groups`].
    pub option_groups: &'static [&'static str],
    /// It serves QUIC (UDP) on its own engine (`engine::quic_io`), always with TLS, instead
    /// of [`listeners`](Self::listeners) on the TCP engines.
    pub quic: bool,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Every protocol. (Registry line: one entry per protocol.)
pub const PROTOCOLS: [&Protocol; 8] = [
    &http1::PROTOCOL,
    &h2::PROTOCOL,
    &h2::grpc::PROTOCOL,
    &h3::PROTOCOL,
    &ws::PROTOCOL,
    &sio::PROTOCOL,
    &nsq::PROTOCOL,
    &nsq::HTTP_PROTOCOL,
];

/// Every built-in server. (Registry line: one entry per server.)
pub const SERVERS: [&Server; 6] =
    [&http1::SERVER, &h2::SERVER, &h3::SERVER, &ws::SERVER, &sio::SERVER, &nsq::SERVER];

/// Every protocol's load options, flattened into each command that generates load. (Registry
/// line: one field per option group.)
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
pub struct ProtocolOptions {
    #[command(flatten)]
    #[serde(flatten)]
    pub http1: http1::Options,
    #[command(flatten)]
    #[serde(flatten)]
    pub h2: h2::Options,
    #[command(flatten)]
    #[serde(flatten)]
    pub ws: ws::Options,
    #[command(flatten)]
    #[serde(flatten)]
    pub sio: sio::Options,
    #[command(flatten)]
    #[serde(flatten)]
    pub nsq: nsq::Options,
    #[command(flatten)]
    #[serde(flatten)]
    pub nsq_tcp: nsq::TcpOptions,
    #[command(flatten)]
    #[serde(flatten)]
    pub nsq_http: nsq::HttpOptions,
}

impl ProtocolOptions {
    /// The flags given, each with the protocols it applies to.
    pub fn given(&self) -> Vec<(String, Vec<&'static str>)> {
        let owners = |groups: &[String]| {
            PROTOCOLS.iter().filter(|p| owns(p.option_groups, groups)).map(|p| p.name).collect()
        };
        flags_set(self).into_iter().map(|(flag, groups)| (flag, owners(&groups))).collect()
    }
}

/// Every built-in server's options, flattened into `serve`. (Registry line: one field per
/// server that has options.)
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
pub struct ServerOptions {
    #[command(flatten)]
    #[serde(flatten)]
    pub ws: ws::ServeOptions,
    #[command(flatten)]
    #[serde(flatten)]
    pub sio: sio::ServeOptions,
    #[command(flatten)]
    #[serde(flatten)]
    pub nsq: nsq::ServeOptions,
    /// Every server's (no server names its group).
    #[command(flatten)]
    #[serde(skip)]
    pub tls: crate::tls::options::ServeTlsArgs,
}

impl ServerOptions {
    /// The flags given that some servers read, each with those servers.
    pub fn given(&self) -> Vec<(String, Vec<&'static str>)> {
        let owners = |groups: &[String]| {
            SERVERS.iter().filter(|s| owns(s.option_groups, groups)).map(|s| s.name).collect()
        };
        flags_set(self).into_iter().map(|(flag, groups)| (flag, owners(&groups))).collect()
    }
}

/// Whether option groups `mine` hold a flag in `groups`.
fn owns(mine: &[&str], groups: &[String]) -> bool {
    groups.iter().any(|g| mine.contains(&g.as_str()))
}

/// The flags of `options` that are set (to anything but their default), each with the ids of
/// the clap groups that hold it, as `-m/--method` or `--batch`. Read off clap's own definition
/// of `T` and the values themselves (their serde names are the clap ids), so a new flag in an
/// option group needs no list: only its group, named by the protocols that read it.
pub fn flags_set<T>(options: &T) -> Vec<(String, Vec<String>)>
where
    T: clap::Args + serde::Serialize + Default,
{
    let command = T::augment_args(clap::Command::new("options"));
    let value = |o: &T| serde_json::to_value(o).unwrap_or_default();
    let (set, unset) = (value(options), value(&T::default()));
    command
        .get_arguments()
        .filter(|arg| set.get(arg.get_id().as_str()) != unset.get(arg.get_id().as_str()))
        .map(|arg| {
            let groups = command
                .get_groups()
                .filter(|g| g.get_args().any(|id| id == arg.get_id()))
                .map(|g| g.get_id().to_string())
                .collect();
            (flag_name(arg), groups)
        })
        .collect()
}

/// A flag as the user writes it: `-m/--method`, `--batch`.
fn flag_name(arg: &clap::Arg) -> String {
    match (arg.get_short(), arg.get_long()) {
        (Some(short), Some(long)) => format!("-{short}/--{long}"),
        (Some(short), None) => format!("-{short}"),
        (None, Some(long)) => format!("--{long}"),
        (None, None) => arg.get_id().to_string(),
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

/// The schemes of TLS targets, for messages: `https://, wss://, … or nsq://…?tls=1` (a scheme
/// whose handshake upgrades is TLS with `tls=1` in its query).
pub fn tls_schemes_text() -> String {
    use crate::tls::options::TlsStart;
    let schemes = || PROTOCOLS.iter().flat_map(|p| p.schemes.iter());
    // Those TLS from the connect first, then those that upgrade.
    let at_connect = schemes()
        .filter(|s| matches!(s.tls, Some(TlsStart::AtConnect | TlsStart::InQuic)))
        .map(|s| format!("{}://", s.name));
    let upgrading =
        schemes().filter(|s| s.tls == Some(TlsStart::InHandshake)).map(|s| format!("{}://…?tls=1", s.name));
    let names: Vec<String> = at_connect.chain(upgrading).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// `serve --listen`'s help: every built-in server's default address, from the registry.
pub fn listen_help() -> String {
    let defaults: Vec<String> =
        SERVERS.iter().map(|s| format!("{} for {}", s.default_listen, s.name)).collect();
    format!("Address to listen on (loopback by default: {}; port 0 picks a free port)", defaults.join(", "))
}

/// `bench`'s help for its URLs, naming every scheme there is.
pub fn url_help() -> String {
    format!(
        "Target URL ({}), e.g. http://127.0.0.1:8080/ or nsq://127.0.0.1:4150/TOPIC; several of one protocol share the connections round-robin",
        schemes_text()
    )
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
            "http://, https://, h2c://, h2://, grpc://, grpcs://, h3://, ws://, wss://, sio://, sios://, nsq://, nsq+http:// or nsq+https://"
        );
        assert_eq!(schemes_of(&["nsq", "nsq-http"]), "nsq://, nsq+http:// and nsq+https://");
        for s in SERVERS {
            assert_eq!(server(s.name).map(|s| s.name), Some(s.name));
        }
    }

    /// Every flag of an option group is seen when set (its serde name is its clap id) and
    /// read by some protocol (or server); every group a protocol names exists.
    #[test]
    fn every_option_flag_is_seen_and_owned() {
        fn check<T: clap::Args + serde::Serialize + Default>(owned: &[&str]) {
            let command = T::augment_args(clap::Command::new("options"));
            let keys = serde_json::to_value(T::default()).unwrap();
            let groups: Vec<String> = command.get_groups().map(|g| g.get_id().to_string()).collect();
            for group in owned {
                assert!(groups.iter().any(|g| g == group), "no option group {group}");
            }
            for arg in command.get_arguments() {
                let id = arg.get_id().as_str();
                let in_owned = command
                    .get_groups()
                    .filter(|g| owned.contains(&g.get_id().as_str()))
                    .any(|g| g.get_args().any(|a| a == arg.get_id()));
                if in_owned {
                    assert!(keys.get(id).is_some(), "--{id} would never be seen as given");
                }
            }
        }
        let of_protocols: Vec<&str> =
            PROTOCOLS.iter().flat_map(|p| p.option_groups.iter().copied()).collect();
        let of_servers: Vec<&str> = SERVERS.iter().flat_map(|s| s.option_groups.iter().copied()).collect();
        check::<ProtocolOptions>(&of_protocols);
        check::<ServerOptions>(&of_servers);
        // Every load flag of a protocol's group is owned: none is left to no protocol.
        let command = <ProtocolOptions as clap::Args>::augment_args(clap::Command::new("options"));
        for arg in command.get_arguments() {
            let owned = command
                .get_groups()
                .filter(|g| of_protocols.contains(&g.get_id().as_str()))
                .any(|g| g.get_args().any(|a| a == arg.get_id()));
            assert!(owned, "--{} is read by no protocol", arg.get_id());
        }
        let options = ProtocolOptions {
            nsq_tcp: nsq::TcpOptions { no_identify: true, ..Default::default() },
            http1: http1::Options { method: Some("PUT".into()) },
            ..Default::default()
        };
        assert_eq!(
            options.given(),
            vec![
                ("-m/--method".to_string(), vec!["http1", "h2", "h3"]),
                ("--no-identify".to_string(), vec!["nsq"])
            ]
        );
    }
}
