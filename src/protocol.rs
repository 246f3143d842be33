//! The protocol registry: the one place every protocol is named — a line per protocol module
//! in `registry!`'s invocation below. From those lines come the protocol and server lists,
//! the command line's option groups ([`ProtocolOptions`], [`ServerOptions`]) and each
//! protocol's `run` on the engines ([`crate::drive::Engines`]). What each protocol declares
//! (its schemes, rules, options, `compare` rows, built-in server) is in its own module, as the
//! descriptor types of [`crate::plan::protocol`]; the commands and reports ask this registry,
//! never a protocol by name. The recipe for adding one is in `docs/ARCHITECTURE.md`.

use crate::drive::Engines;
use crate::plan::{
    self, Defaults, EngineArgs, Load, LoadArgs, LoadPlan, OptionSet, Prepared, Protocol, Server,
};
use crate::plan::{Scheme, Target, flags_set};
use crate::stats::Report;
use anyhow::{Result, bail};

/// The registry, from one line per protocol module:
/// `module: [PROTOCOL => run, …] [SERVER, …];` — the module's protocols, each with its generic
/// `run::<D: Drive>`, and its built-in servers. Every module has an `Options` (its load flags)
/// and a `ServeOptions` (its servers' flags), each a clap group, empty where it has none.
macro_rules! registry {
    ($($module:ident: [$($protocol:ident => $run:ident),+] [$($server:ident),*];)+) => {
        use crate::proto::{$($module),+};

        /// Every protocol, in the order of the lines.
        pub static PROTOCOLS: &[&Protocol] = &[$($(&$module::$protocol),+),+];

        /// Each protocol's `run` on the engines, in the order of [`PROTOCOLS`].
        static RUNS: &[plan::Run] = &[$($($module::$run::<Engines>),+),+];

        /// Every built-in server.
        pub static SERVERS: &[&Server] = &[$($(&$module::$server),*),+];

        /// Every fuzz target, by name: each module's `fuzz::TARGETS`.
        pub fn fuzz_targets() -> impl Iterator<Item = &'static (&'static str, crate::props::Target)> {
            [$($module::fuzz::TARGETS),+].into_iter().flatten()
        }

        /// The valid streams the fuzz target `name` is given to mutate (its module's).
        pub fn fuzz_samples(name: &str) -> Vec<Vec<u8>> {
            $(
                if $module::fuzz::TARGETS.iter().any(|(n, _)| *n == name) {
                    return $module::fuzz::samples(name);
                }
            )+
            Vec::new()
        }

        /// Every protocol's load options, flattened into each command that generates load.
        #[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
        pub struct ProtocolOptions {
            $(
                #[command(flatten)]
                #[serde(flatten)]
                pub $module: $module::Options,
            )+
        }

        impl From<ProtocolOptions> for OptionSet {
            fn from(options: ProtocolOptions) -> OptionSet {
                let mut set = OptionSet::default();
                set.given = options.given();
                $(set = set.with(options.$module);)+
                set
            }
        }

        /// Every built-in server's options, flattened into `serve`.
        #[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
        pub struct ServerOptions {
            $(
                #[command(flatten)]
                #[serde(flatten)]
                pub $module: $module::ServeOptions,
            )+
            /// Every server's (no server names its group).
            #[command(flatten)]
            #[serde(skip)]
            pub tls: crate::tls::options::ServeTlsArgs,
        }

        impl ServerOptions {
            /// The servers' option groups, each found by its type.
            pub fn set(&self) -> OptionSet {
                let mut set = OptionSet::default();
                set.given = self.given();
                $(set = set.with(self.$module.clone());)+
                set
            }
        }
    };
}

registry! {
    http1: [PROTOCOL => run] [SERVER];
    h2: [PROTOCOL => run, GRPC => run_grpc] [SERVER];
    h3: [PROTOCOL => run] [SERVER];
    ws: [PROTOCOL => run] [SERVER];
    sio: [PROTOCOL => run] [SERVER];
    nsq: [PROTOCOL => run, HTTP_PROTOCOL => run_http] [SERVER];
    mqtt: [PROTOCOL => run] [SERVER];
    tcp: [PROTOCOL => run] [SERVER, SERVER_UDP];
}

/// Run a prepared plan once: its protocol builds its codec and the engines drive it.
pub fn run(p: &Prepared) -> Result<Report> {
    let at = PROTOCOLS.iter().position(|q| std::ptr::eq(*q, p.plan.protocol));
    let run = at
        .map(|i| RUNS[i])
        .ok_or_else(|| anyhow::anyhow!("{} is not in the registry", p.plan.protocol.name))?;
    run(p)
}

/// Run the fuzz target called `name` on `data` (the fuzz harness's one entry); an unknown name
/// panics, naming those there are.
pub fn fuzz(name: &str, data: &[u8]) {
    match fuzz_targets().find(|(n, _)| *n == name) {
        Some((_, target)) => target(data),
        None => {
            let names: Vec<&str> = fuzz_targets().map(|(n, _)| *n).collect();
            panic!("no fuzz target {name}: there are {}", names.join(", "))
        }
    }
}

/// What the first bytes a server sent look like, by the registry's protocols (the first that
/// recognizes them); `None`: none does.
pub fn recognize(bytes: &[u8]) -> Option<&'static str> {
    PROTOCOLS.iter().find_map(|p| (p.recognize)(bytes))
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

/// A URL parsed against the registry's schemes (no I/O).
pub fn target(url: &str) -> Result<Target, plan::target::TargetError> {
    plan::target::parse(url, PROTOCOLS)
}

/// The protocol and scheme a URL's scheme names (any case).
pub fn by_scheme(scheme: &str) -> Option<(&'static Protocol, &'static Scheme)> {
    plan::target::by_scheme(PROTOCOLS, scheme)
}

/// The schemes there are, for messages: `http://, ws://, nsq:// or nsq+http://`.
pub fn schemes_text() -> String {
    plan::target::schemes_text(PROTOCOLS)
}

/// Aim `load` at `url`, under its protocol's own rules (pure). Options that belong to other
/// protocols are ignored here (`compare` aims one load at every protocol); [`validate`]
/// refuses them for a single target.
pub fn aim(load: &Load, url: &str) -> Result<LoadPlan> {
    let target = target(url)?;
    let plan = LoadPlan { protocol: target.protocol, target, also: Vec::new(), load: load.clone() };
    (plan.protocol.validate)(&plan)?;
    Ok(plan)
}

/// Check a single run's options and aim them at `url` (pure).
pub fn validate(
    url: &str,
    args: &LoadArgs<ProtocolOptions>,
    engine: &EngineArgs,
    defaults: &Defaults,
    online: &[usize],
) -> Result<LoadPlan> {
    let plan = aim(&plan::validate_load(args, engine, defaults, online)?, url)?;
    refuse_foreign_options(&plan)?;
    Ok(plan)
}

/// Check a run on several targets (`bench URL URL …`, pure): one protocol for all, each aimed
/// under its rules; connections are spread over them round-robin.
pub fn validate_targets(
    urls: &[String],
    args: &LoadArgs<ProtocolOptions>,
    engine: &EngineArgs,
    defaults: &Defaults,
    online: &[usize],
) -> Result<LoadPlan> {
    let Some((first, rest)) = urls.split_first() else { bail!("give at least one target URL") };
    // The options are checked against every target together (`--insecure` with one TLS
    // target among plaintext ones applies to it).
    let mut plan = aim(&plan::validate_load(args, engine, defaults, online)?, first)?;
    for url in rest {
        let other = aim(&plan.load, url)?;
        if other.protocol.name != plan.protocol.name {
            bail!(
                "{url} is a {} target but {first} is {}: one protocol per run (run them apart, or use `compare`)",
                other.protocol.name,
                plan.protocol.name
            );
        }
        plan.also.push(other.target);
    }
    if plan.load.shape.connections < urls.len() {
        bail!("{} targets need at least as many connections (-c {})", urls.len(), urls.len());
    }
    refuse_foreign_options(&plan)?;
    Ok(plan)
}

/// Refuse options given for other protocols than the plan's (a single target).
pub fn refuse_foreign_options(plan: &LoadPlan) -> Result<()> {
    let tls_flags = flags_set(&plan.load.tls);
    if !tls_flags.is_empty() && plan.targets().all(|t| t.tls.is_none()) {
        let flags: Vec<String> = tls_flags.into_iter().map(|(flag, _)| flag).collect();
        let verb = if flags.len() == 1 { "applies" } else { "apply" };
        bail!("{} {verb} to TLS targets: {}", flags.join(" and "), tls_schemes_text());
    }
    if plan.load.proxy.is_some()
        && let Some(t) =
            plan.targets().find(|t| t.datagrams || t.tls == Some(crate::tls::options::TlsStart::InQuic))
    {
        bail!("--proxy-protocol applies to TCP targets: {} is UDP", t.url);
    }
    if plan.load.unix.is_some()
        && let Some(t) = plan.targets().find(|t| t.tls == Some(crate::tls::options::TlsStart::InQuic))
    {
        bail!("--unix-socket carries a byte stream: {} is QUIC over UDP", t.url);
    }
    if let Some((_, Some(source))) = plan.load.proxy
        && let Some(t) = plan.targets().find(|t| {
            t.host
                .trim_matches(['[', ']'])
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_ipv4() != source.is_ipv4())
        })
    {
        bail!("--proxy-source {source} is not of {}'s address family: a PROXY header names one", t.url);
    }
    for (flag, owners) in &plan.load.options.given {
        if !owners.contains(&plan.protocol.name) {
            bail!("{flag} applies to {} targets", schemes_of(owners));
        }
    }
    Ok(())
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
        // Every scheme named once, in the registry's order, the last after "or".
        let all: Vec<String> =
            PROTOCOLS.iter().flat_map(|p| p.schemes).map(|s| format!("{}://", s.name)).collect();
        let (last, rest) = all.split_last().unwrap();
        assert_eq!(schemes_text(), format!("{} or {last}", rest.join(", ")));
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
            nsq: nsq::Options {
                tcp: nsq::TcpOptions { no_identify: true, ..Default::default() },
                ..Default::default()
            },
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
