//! Target URLs: `http://host:port/path?query` and the other schemes, parsed into what the
//! engines need (a socket address) and what the codecs need (host, path), with errors a user
//! can act on.

use std::net::{SocketAddr, ToSocketAddrs};

/// The protocols a URL can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Ws,
    Nsq,
    NsqHttp,
}

impl Scheme {
    fn parse(s: &str) -> Option<Scheme> {
        match s.to_ascii_lowercase().as_str() {
            "http" => Some(Scheme::Http),
            "ws" => Some(Scheme::Ws),
            "nsq" => Some(Scheme::Nsq),
            "nsq+http" => Some(Scheme::NsqHttp),
            _ => None,
        }
    }
    fn default_port(self) -> u16 {
        match self {
            Scheme::Http | Scheme::Ws => 80,
            Scheme::Nsq => 4150,
            Scheme::NsqHttp => 4151,
        }
    }
}

/// A parsed, resolved target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub url: String,
    pub scheme: Scheme,
    /// The authority as written (`host:port`, `[::1]:80`, `localhost`): the default Host header.
    pub authority: String,
    pub host: String,
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
    pub addr: SocketAddr,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TargetError {
    #[error("'{0}' is not a URL: expected SCHEME://HOST[:PORT][/PATH], e.g. http://127.0.0.1:8080/")]
    NoScheme(String),
    #[error("unsupported scheme '{0}' in '{1}': use http://, ws://, nsq:// or nsq+http://")]
    Scheme(String, String),
    #[error("'{0}' has no host")]
    NoHost(String),
    #[error("'{1}' has an invalid port '{0}': expected 1-65535")]
    Port(String, String),
    #[error("cannot resolve host '{0}': {1}")]
    Resolve(String, String),
    #[error("'{0}': {1}")]
    Unsupported(String, &'static str),
}

pub fn parse(url: &str) -> Result<Target, TargetError> {
    let url = url.trim();
    let (scheme_text, rest) = url.split_once("://").ok_or_else(|| TargetError::NoScheme(url.into()))?;
    let scheme =
        Scheme::parse(scheme_text).ok_or_else(|| TargetError::Scheme(scheme_text.into(), url.into()))?;
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
        None => scheme.default_port(),
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(TargetError::Port(p.into(), url.into())),
        },
    };
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| TargetError::Resolve(host.into(), e.to_string()))?
        .next()
        .ok_or_else(|| TargetError::Resolve(host.into(), "no address".into()))?;
    Ok(Target { url: url.into(), scheme, authority: authority.into(), host: host.into(), port, path, addr })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_http_with_path_and_query() {
        let t = parse("http://127.0.0.1:8080/a/b?x=1#frag").unwrap();
        assert_eq!(t.scheme, Scheme::Http);
        assert_eq!(t.authority, "127.0.0.1:8080");
        assert_eq!(t.path, "/a/b?x=1");
        assert_eq!(t.addr, "127.0.0.1:8080".parse().unwrap());
    }

    #[test]
    fn defaults_path_and_port_and_handles_ipv6() {
        let t = parse("http://[::1]").unwrap();
        assert_eq!((t.port, t.path.as_str(), t.authority.as_str()), (80, "/", "[::1]"));
        let t = parse("nsq://127.0.0.1/test").unwrap();
        assert_eq!((t.scheme, t.port, t.path.as_str()), (Scheme::Nsq, 4150, "/test"));
        let t = parse("http://127.0.0.1:9?q").unwrap();
        assert_eq!(t.path, "/?q");
    }

    #[test]
    fn clear_errors() {
        assert!(matches!(parse("127.0.0.1:80"), Err(TargetError::NoScheme(_))));
        assert!(matches!(parse("ftp://x/"), Err(TargetError::Scheme(..))));
        assert!(matches!(parse("http://:80/"), Err(TargetError::NoHost(_))));
        assert!(matches!(parse("http://127.0.0.1:99999/"), Err(TargetError::Port(..))));
        assert!(matches!(parse("http://127.0.0.1:0/"), Err(TargetError::Port(..))));
        assert!(matches!(parse("http://no-such-host.invalid/"), Err(TargetError::Resolve(..))));
    }
}
