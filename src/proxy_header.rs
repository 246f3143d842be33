//! The PROXY protocol's header (HAProxy's `proxy-protocol.txt`, versions 1 and 2): what a load
//! balancer sends first on a connection to the server behind it, naming the client it speaks
//! for. With `--proxy-protocol`, every connection sends one before anything else (before TLS
//! and the protocol's own set-up), counted as set-up bytes.
//!
//! The client it claims is `--proxy-source` (default: the loopback address of the target's
//! family) with a port of its own per connection: the header says what the flags say, not what
//! the socket is (the `uring` engine's direct descriptors have no address to read back).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The header's version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum ProxyVersion {
    /// Text: `PROXY TCP4 SRC DST SPORT DPORT\r\n`.
    V1,
    /// Binary: a 12-byte signature, version and command, family, length, the addresses.
    V2,
}

/// Version 2's signature.
pub const V2_SIGNATURE: [u8; 12] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A];

/// What connection `index` to `target` sends first under `proxy` (`--proxy-protocol` and
/// `--proxy-source`; `None`: nothing): the run's connections and the pre-flight's alike.
pub fn for_connection(
    proxy: Option<(ProxyVersion, Option<IpAddr>)>,
    target: SocketAddr,
    index: usize,
) -> Option<Vec<u8>> {
    proxy.map(|(version, source)| header(version, source, target, index))
}

/// The header connection `index` sends to `target`, claiming `source` (the loopback address of
/// the target's family when `None`) and a port of its own. A source of the other family than the
/// target is claimed as the target's loopback (a header names one family).
pub fn header(version: ProxyVersion, source: Option<IpAddr>, target: SocketAddr, index: usize) -> Vec<u8> {
    let port = 1024 + (index % 64_512) as u16;
    let ip = match (source, target.ip()) {
        (Some(s @ IpAddr::V4(_)), IpAddr::V4(_)) | (Some(s @ IpAddr::V6(_)), IpAddr::V6(_)) => s,
        (_, IpAddr::V4(_)) => IpAddr::V4(Ipv4Addr::LOCALHOST),
        (_, IpAddr::V6(_)) => IpAddr::V6(Ipv6Addr::LOCALHOST),
    };
    let src = SocketAddr::new(ip, port);
    match version {
        ProxyVersion::V1 => {
            let family = if target.is_ipv4() { "TCP4" } else { "TCP6" };
            format!("PROXY {family} {} {} {} {}\r\n", src.ip(), target.ip(), src.port(), target.port())
                .into_bytes()
        }
        ProxyVersion::V2 => {
            let mut out = V2_SIGNATURE.to_vec();
            out.push(0x21); // version 2, PROXY
            match (src.ip(), target.ip()) {
                (IpAddr::V4(s), IpAddr::V4(d)) => {
                    out.push(0x11); // TCP over IPv4
                    out.extend_from_slice(&12u16.to_be_bytes());
                    out.extend_from_slice(&s.octets());
                    out.extend_from_slice(&d.octets());
                }
                (s, d) => {
                    let six = |ip: IpAddr| match ip {
                        IpAddr::V6(v6) => v6.octets(),
                        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
                    };
                    out.push(0x21); // TCP over IPv6
                    out.extend_from_slice(&36u16.to_be_bytes());
                    out.extend_from_slice(&six(s));
                    out.extend_from_slice(&six(d));
                }
            }
            out.extend_from_slice(&src.port().to_be_bytes());
            out.extend_from_slice(&target.port().to_be_bytes());
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_1_is_one_line_of_text() {
        let target: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let h = header(ProxyVersion::V1, Some("10.1.2.3".parse().unwrap()), target, 0);
        assert_eq!(h, b"PROXY TCP4 10.1.2.3 127.0.0.1 1024 8080\r\n");
        let six: SocketAddr = "[::1]:443".parse().unwrap();
        assert_eq!(header(ProxyVersion::V1, None, six, 5), b"PROXY TCP6 ::1 ::1 1029 443\r\n");
    }

    #[test]
    fn version_2_is_the_signature_and_the_addresses_in_binary() {
        let target: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let h = header(ProxyVersion::V2, None, target, 1);
        let mut want = V2_SIGNATURE.to_vec();
        want.extend_from_slice(&[0x21, 0x11, 0, 12, 127, 0, 0, 1, 127, 0, 0, 1, 0x04, 0x01, 0x1f, 0x90]);
        assert_eq!(h, want);
        assert_eq!(header(ProxyVersion::V2, None, "[::1]:1".parse().unwrap(), 0).len(), 16 + 36);
    }
}
