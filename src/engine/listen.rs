//! The built-in servers' listening sockets: for TCP, one socket per core in an `SO_REUSEPORT`
//! group; for a Unix path (`serve --listen unix:PATH`), one socket whose descriptor every core
//! shares (a path is bound once); and the checks that a port or a path is no other program's.

use crate::plan::Endpoint;
use std::io;
use std::net::SocketAddr;
use std::path::Path;

/// A listening socket in an `SO_REUSEPORT` group, non-blocking, with `TCP_NODELAY` (Linux
/// copies it into every connection accepted: a raw io_uring accept has no other moment to set
/// it, and without it Nagle's algorithm holds a small answer back while an earlier one is
/// unacknowledged).
pub fn reuseport_listener(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    let s = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM.cloexec(), None)?;
    s.set_reuse_port(true)?;
    s.set_reuse_address(true)?;
    s.set_tcp_nodelay(true)?;
    s.bind(&addr.into())?;
    s.listen(4096)?;
    s.set_nonblocking(true)?;
    Ok(s.into())
}

/// Whether the port of `addr` is free of every other socket: a socket bound without
/// `SO_REUSEPORT` is refused where anything else is bound, so a server's own sockets share
/// the port among its cores and never with another process's (a second `serve` on the same
/// port used to take a share of the connections without a word). Port 0: always free.
pub fn unclaimed(addr: SocketAddr, kind: socket2::Type) -> io::Result<()> {
    if addr.port() == 0 {
        return Ok(());
    }
    let probe = socket2::Socket::new(socket2::Domain::for_address(addr), kind.cloexec(), None)?;
    probe.set_reuse_address(true)?;
    probe.bind(&addr.into()).map_err(|e| match e.kind() {
        io::ErrorKind::AddrInUse => io::Error::new(
            e.kind(),
            "the port is in use by another program (or another wirebench serve): stop it, or choose another --listen",
        ),
        _ => e,
    })
}

/// A listening Unix stream socket at `path`, non-blocking. A socket file left there by a
/// server that is gone (a connect to it is refused) is replaced; one that answers is another
/// program's, and refused; any other file is never touched.
pub fn unix_listener(path: &Path) -> io::Result<std::net::TcpListener> {
    let addr = socket2::SockAddr::unix(path)?;
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        use std::os::unix::fs::FileTypeExt;
        if !meta.file_type().is_socket() {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "a file that is not a socket is there"));
        }
        // Only a refused connect says nobody is there (a stream socket whose server is gone).
        // A connect taken, or one a full queue holds back (non-blocking: no wait), is a live
        // server's; another socket type or a permission refused is not ours to remove.
        let probe =
            socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM.nonblocking().cloexec(), None)?;
        match probe.connect(&addr) {
            Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => std::fs::remove_file(path)?,
            Ok(()) => {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    "another program (or another wirebench serve) listens there: stop it, or choose another path",
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    "another program listens there (its accept queue is full): stop it, or choose another path",
                ));
            }
            Err(e) => {
                return Err(io::Error::new(e.kind(), format!("a socket that is not ours to replace: {e}")));
            }
        }
    }
    let s = socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM.cloexec(), None)?;
    s.bind(&addr)?;
    s.listen(4096)?;
    s.set_nonblocking(true)?;
    // The engines take any listening stream socket as a `TcpListener`'s descriptor: their
    // accepts work on it alike.
    Ok(std::net::TcpListener::from(std::os::fd::OwnedFd::from(s)))
}

/// `cores` listeners for `endpoint`: an `SO_REUSEPORT` group on one port (port 0: one picked,
/// the same for all), or one Unix socket's descriptor duplicated; and the endpoint bound.
pub fn listeners_for(
    endpoint: &Endpoint,
    cores: usize,
) -> io::Result<(Vec<std::net::TcpListener>, Endpoint)> {
    let (first, bound) = match endpoint {
        Endpoint::Ip(addr) => {
            unclaimed(*addr, socket2::Type::STREAM)?;
            let first = reuseport_listener(*addr)?;
            let bound = first.local_addr()?;
            (first, Endpoint::Ip(bound))
        }
        Endpoint::Unix(path) => (unix_listener(path)?, endpoint.clone()),
        Endpoint::Udp(_) => {
            return Err(io::Error::new(io::ErrorKind::Unsupported, "a stream server cannot listen on UDP"));
        }
    };
    let mut all = Vec::with_capacity(cores);
    for _ in 1..cores {
        all.push(match &bound {
            Endpoint::Ip(addr) | Endpoint::Udp(addr) => reuseport_listener(*addr)?,
            Endpoint::Unix(_) => first.try_clone()?,
        });
    }
    all.insert(0, first);
    Ok((all, bound))
}
