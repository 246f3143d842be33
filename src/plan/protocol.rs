//! What a protocol declares, once, in its own module: the descriptor types the registry
//! (`crate::protocol`) lists — [`Protocol`] (schemes, rules, options, `compare` rows), [`Server`]
//! (a built-in server) — and the [`OptionSet`] a plan carries every protocol's options in,
//! each found by its type, so that plans hold them without knowing the protocols.

use super::LoadPlan;
use crate::codec::Listener;
use std::any::Any;
use std::net::SocketAddr;
use std::sync::Arc;

/// A URL scheme a protocol answers to, and the port it means when the URL names none.
#[derive(Debug)]
pub struct Scheme {
    pub name: &'static str,
    pub default_port: u16,
    /// Whether its connections speak TLS: from the connect (`https`), or when the protocol's
    /// handshake upgrades, if the URL's query says `tls=1` (`nsq://…?tls=1`: nsqd's `tls_v1`).
    pub tls: Option<crate::tls::options::TlsStart>,
    /// Its connections are connected UDP sockets (`udp://`): each write one datagram, each
    /// receive one, on the `uring` engine; otherwise TCP (QUIC's are its own engine's).
    pub datagrams: bool,
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
    /// Its rows in `compare`, from the comparison's plan aimed at its URL.
    pub compare_rows: fn(&LoadPlan) -> Vec<CompareRow>,
    /// The option groups it reads (ids of clap groups in the registry's `ProtocolOptions`): a load flag
    /// applies to the protocols whose groups hold it.
    pub option_groups: &'static [&'static str],
    /// Whether its operations are HTTP requests whose method, path and headers a `--requests`
    /// entry may set (else an entry is a message: its body): the method its options give.
    pub http_method: Option<fn(&LoadPlan) -> String>,
    /// The protocol it offers by ALPN when TLS starts at the connect, and whether the server
    /// must agree to it (HTTP/2 must be agreed; a server that says nothing speaks HTTP/1.1);
    /// `None`: it offers none (a protocol with no ALPN name).
    pub alpn: Option<(&'static [u8], bool)>,
    /// What a server's first bytes say if they are this protocol's — `HTTP/1.1 (a response)`
    /// — else `None`: the verdict of a run that completed nothing names what the target
    /// seems to speak instead (the registry's `recognize`; TLS records are recognized beside it).
    pub recognize: fn(&[u8]) -> Option<&'static str>,
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
    /// It is the floor: the bare transport carrying the same payload, as many times (a
    /// protocol's module sets it only for the floor's own rows). Every row is put beside the
    /// floor row of its payload crossings and its TLS, as a multiple of it.
    pub floor: bool,
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
    pub listeners: fn(SocketAddr, &OptionSet, bool) -> anyhow::Result<Vec<Listener>>,
    /// With TLS, when each listener's connections start it; empty: it serves no TLS, and
    /// `--tls` is refused for it.
    pub tls: &'static [crate::tls::options::TlsStart],
    /// With TLS, the protocol it agrees to by ALPN (`http/1.1`, `h2`); `None`: none.
    pub alpn: Option<&'static [u8]>,
    /// The target URL of each of its listeners once bound (TLS or not), for `compare` and
    /// `sweep`.
    pub urls: fn(&[SocketAddr], bool) -> Vec<String>,
    /// The option groups it reads (ids of clap groups in the registry's `ServerOptions`), as
    /// [`Protocol::option_groups`].
    pub option_groups: &'static [&'static str],
    /// It serves QUIC (UDP) on its own engine (`engine::quic_io`), always with TLS, instead
    /// of [`listeners`](Self::listeners) on the TCP engines.
    pub quic: bool,
    /// It answers datagrams (UDP, `serve udp`) on the datagram loop (`engine::udp_server`):
    /// the answerer for the server options, instead of [`listeners`](Self::listeners).
    pub datagrams: Option<fn(&OptionSet) -> anyhow::Result<crate::codec::BoxedDatagramServer>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Every option group of the protocols (or of the servers), each found by its type:
/// `plan.load.options.get::<ws::Options>()`. Built by the registry from the command line's
/// options; a group nobody gave reads as its default. Cheap to clone (shared).
#[derive(Clone, Default)]
pub struct OptionSet {
    groups: Vec<Arc<dyn Any + Send + Sync>>,
    /// The flags given, each with the names of the protocols (or servers) that read it.
    pub given: Vec<(String, Vec<&'static str>)>,
}

impl OptionSet {
    /// Add a group (one of each type: a second replaces the first).
    pub fn with<T: Any + Send + Sync>(mut self, group: T) -> OptionSet {
        self.groups.retain(|g| !g.is::<T>());
        self.groups.push(Arc::new(group));
        self
    }

    /// Put a group in place of the one of its type.
    pub fn put<T: Any + Send + Sync>(&mut self, group: T) {
        *self = std::mem::take(self).with(group);
    }

    /// The group of type `T`, or its default when none was added.
    pub fn get<T: Any + Send + Sync + Default>(&self) -> Arc<T> {
        self.groups
            .iter()
            .find_map(|g| g.clone().downcast::<T>().ok())
            .unwrap_or_else(|| Arc::new(T::default()))
    }
}

impl std::fmt::Debug for OptionSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OptionSet").field("groups", &self.groups.len()).field("given", &self.given).finish()
    }
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

/// [`Protocol::check_payload`] for protocols that take any bytes.
pub fn any_payload(_: &LoadPlan, _: &[u8]) -> anyhow::Result<()> {
    Ok(())
}

/// [`Protocol::messages_per_op`] for protocols that carry one message per operation.
pub fn one_message(_: &LoadPlan) -> u64 {
    1
}
