//! Target URLs: `http://host:port/path?query` and the other schemes (those of the protocols
//! it is given: the registry's), parsed into what the codecs need (host, path) and the
//! protocol they name; resolving the host into a socket address is a separate step, done when
//! a plan is prepared.

use super::{Protocol, Scheme};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;

/// Where a target's connections go: an IP address and port (the URL's host, resolved), or a
/// Unix domain socket's path (`--unix-socket`: the URL then names the host the protocol
/// speaks to — HTTP's `Host`, TLS's server name — as curl's option does).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// TCP to an address and port.
    Ip(SocketAddr),
    /// A connected UDP socket (`udp://`): each write one datagram, each receive one.
    Udp(SocketAddr),
    Unix(Arc<Path>),
}

/// The longest path a Unix socket's address holds (`sun_path`, less its terminating NUL).
pub const MAX_UNIX_PATH: usize = 107;

impl Endpoint {
    /// The IP address and port, if it is one.
    pub fn ip(&self) -> Option<SocketAddr> {
        match self {
            Endpoint::Ip(addr) | Endpoint::Udp(addr) => Some(*addr),
            Endpoint::Unix(_) => None,
        }
    }

    pub fn is_datagram(&self) -> bool {
        matches!(self, Endpoint::Udp(_))
    }

    pub fn is_ipv6(&self) -> bool {
        self.ip().is_some_and(|a| a.is_ipv6())
    }

    pub fn is_unix(&self) -> bool {
        matches!(self, Endpoint::Unix(_))
    }

    /// The address to `connect` or `bind` (a Unix path too long for one is an error).
    pub fn sockaddr(&self) -> std::io::Result<socket2::SockAddr> {
        match self {
            Endpoint::Ip(addr) | Endpoint::Udp(addr) => Ok((*addr).into()),
            Endpoint::Unix(path) => socket2::SockAddr::unix(path),
        }
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Ip(addr) => write!(f, "{addr}"),
            Endpoint::Udp(addr) => write!(f, "udp:{addr}"),
            Endpoint::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

impl From<SocketAddr> for Endpoint {
    fn from(addr: SocketAddr) -> Endpoint {
        Endpoint::Ip(addr)
    }
}

/// A parsed target, not yet resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub url: String,
    /// The protocol its scheme names.
    pub protocol: &'static Protocol,
    /// The authority as written (`host:port`, `[::1]:80`, `localhost`): the default Host header.
    pub authority: String,
    pub host: String,
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
    /// Whether and when its connections speak TLS.
    pub tls: Option<crate::tls::options::TlsStart>,
    /// Its connections are connected UDP sockets (the scheme's [`Scheme::datagrams`]).
    pub datagrams: bool,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TargetError {
    #[error("'{0}' is not a URL: expected SCHEME://HOST[:PORT][/PATH], e.g. http://127.0.0.1:8080/")]
    NoScheme(String),
    #[error("unsupported scheme '{0}' in '{1}': use {2}")]
    Scheme(String, String, String),
    #[error("'{0}' has no host")]
    NoHost(String),
    #[error("'{1}' has an invalid port '{0}': expected 1-65535")]
    Port(String, String),
    #[error("cannot resolve host '{0}': {1}")]
    Resolve(String, String),
    #[error("'{0}': {1}")]
    Unsupported(String, &'static str),
}

/// The protocol and scheme of `protocols` a URL's scheme names (any case).
pub fn by_scheme(
    protocols: &[&'static Protocol],
    scheme: &str,
) -> Option<(&'static Protocol, &'static Scheme)> {
    protocols
        .iter()
        .flat_map(|p| p.schemes.iter().map(move |s| (*p, s)))
        .find(|(_, s)| s.name.eq_ignore_ascii_case(scheme))
}

/// The schemes of `protocols`, for messages: `http://, ws://, nsq:// or nsq+http://`.
pub fn schemes_text(protocols: &[&'static Protocol]) -> String {
    let names: Vec<String> =
        protocols.iter().flat_map(|p| p.schemes.iter().map(|s| format!("{}://", s.name))).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// Parse a URL whose scheme is one of `protocols`' (no I/O).
pub fn parse(url: &str, protocols: &[&'static Protocol]) -> Result<Target, TargetError> {
    let url = url.trim();
    let (scheme_text, rest) = url.split_once("://").ok_or_else(|| TargetError::NoScheme(url.into()))?;
    let (protocol, scheme) = by_scheme(protocols, scheme_text)
        .ok_or_else(|| TargetError::Scheme(scheme_text.into(), url.into(), schemes_text(protocols)))?;
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    if authority.contains('@') {
        return Err(TargetError::Unsupported(url.into(), "user info in URLs is not supported"));
    }
    let path = path.split('#').next().unwrap_or("/").to_string();
    let (host, port_text) = if let Some(stripped) = authority.strip_prefix('[') {
        let (h, after) = stripped.split_once(']').ok_or_else(|| TargetError::NoHost(url.into()))?;
        (h, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(TargetError::NoHost(url.into()));
    }
    let port = match port_text {
        None => scheme.default_port,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(TargetError::Port(p.into(), url.into())),
        },
    };
    let tls = match scheme.tls {
        Some(crate::tls::options::TlsStart::InHandshake) if query_says(&path, "tls", "1") => {
            Some(crate::tls::options::TlsStart::InHandshake)
        }
        Some(crate::tls::options::TlsStart::InHandshake) => None,
        other => other,
    };
    Ok(Target {
        url: url.into(),
        protocol,
        authority: authority.into(),
        host: host.into(),
        port,
        path,
        tls,
        datagrams: scheme.datagrams,
    })
}

/// Whether the query of `path` has `name=value`.
pub fn query_says(path: &str, name: &str, value: &str) -> bool {
    path.split_once('?')
        .is_some_and(|(_, q)| form_urlencoded::parse(q.as_bytes()).any(|(k, v)| k == name && v == value))
}

impl Target {
    /// The socket address to connect to (DNS for a name).
    pub fn resolve(&self) -> Result<SocketAddr, TargetError> {
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| TargetError::Resolve(self.host.clone(), e.to_string()))?
            .next()
            .ok_or_else(|| TargetError::Resolve(self.host.clone(), "no address".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str) -> Result<Target, TargetError> {
        super::parse(url, crate::protocol::PROTOCOLS)
    }

    #[test]
    fn parses_http_with_path_and_query() {
        let t = parse("http://127.0.0.1:8080/a/b?x=1#frag").unwrap();
        assert_eq!(t.protocol.name, "http1");
        assert_eq!(t.authority, "127.0.0.1:8080");
        assert_eq!(t.path, "/a/b?x=1");
        assert_eq!(t.resolve().unwrap(), "127.0.0.1:8080".parse().unwrap());
    }

    #[test]
    fn defaults_path_and_port_and_handles_ipv6() {
        let t = parse("http://[::1]").unwrap();
        assert_eq!((t.port, t.path.as_str(), t.authority.as_str()), (80, "/", "[::1]"));
        let t = parse("nsq://127.0.0.1/test").unwrap();
        assert_eq!((t.protocol.name, t.port, t.path.as_str()), ("nsq", 4150, "/test"));
        let t = parse("http://127.0.0.1:9?q").unwrap();
        assert_eq!(t.path, "/?q");
        use crate::tls::options::TlsStart;
        assert_eq!(parse("https://localhost/").unwrap().port, 443);
        assert_eq!(parse("wss://h/").unwrap().tls, Some(TlsStart::AtConnect));
        assert_eq!(parse("nsq+https://h/t").unwrap().port, 4152);
        assert_eq!(parse("nsq://h/t?tls=1").unwrap().tls, Some(TlsStart::InHandshake));
        assert_eq!(parse("nsq://h/t").unwrap().tls, None);
        assert_eq!(parse("http://h/").unwrap().tls, None);
    }

    #[test]
    fn clear_errors() {
        assert!(matches!(parse("127.0.0.1:80"), Err(TargetError::NoScheme(_))));
        assert!(matches!(parse("ftp://x/"), Err(TargetError::Scheme(..))));
        assert!(matches!(parse("http://:80/"), Err(TargetError::NoHost(_))));
        assert!(matches!(parse("http://127.0.0.1:99999/"), Err(TargetError::Port(..))));
        assert!(matches!(parse("http://127.0.0.1:0/"), Err(TargetError::Port(..))));
        assert!(matches!(
            parse("http://no-such-host.invalid/").unwrap().resolve(),
            Err(TargetError::Resolve(..))
        ));
    }
}
