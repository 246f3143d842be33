//! Making a connection's socket: a direct descriptor by a linked chain of SQEs (the socket,
//! its options, the source address, the connect), or a plain one; closing a direct one; and
//! saying why a set-up failed as the plain path says it.

use super::{Addrs, LINK_QUIET, ONE, OP_BIND, OP_CONNECT, OP_QUIET, OP_SOCKET, user_data};
use io_uring::{opcode, squeue, types};
use std::io;

/// A plain socket for a connect to `target` (the layout without direct descriptors), a UDP
/// one where it says datagrams: non-blocking, `TCP_NODELAY` (TCP's), bound to `source` if
/// given.
pub(super) fn plain_socket(
    (target, datagrams): (&socket2::SockAddr, bool),
    source: Option<&socket2::SockAddr>,
) -> io::Result<socket2::Socket> {
    let kind = if datagrams { socket2::Type::DGRAM } else { socket2::Type::STREAM };
    let socket = socket2::Socket::new(
        socket2::Domain::from(i32::from(target.family())),
        kind.nonblocking().cloexec(),
        None,
    )?;
    let _ = socket.set_tcp_nodelay(true);
    match source {
        Some(source) => bind_source(&socket, source).map(|_| socket).map_err(|e| {
            let ip = source.as_socket().map(|s| s.ip().to_string()).unwrap_or_default();
            io::Error::new(e.kind(), format!("binding the source address {ip}: {e}"))
        }),
        None => Ok(socket),
    }
}

/// Why a direct socket's set-up failed before its connect ran, said as the plain path says it.
pub(super) fn setup_error(step: u64, errno: i32, source: Option<u32>, addrs: &Addrs) -> io::Error {
    let e = io::Error::from_raw_os_error(-errno);
    match source.and_then(|s| addrs.sources[s as usize].as_socket()).filter(|_| step == OP_BIND) {
        Some(source) => io::Error::new(e.kind(), format!("binding the source address {}: {e}", source.ip())),
        None => e,
    }
}

/// Bind a socket to a source address, its port left to the connect (`IP_BIND_ADDRESS_NO_PORT`:
/// a port is then unique per destination, not per source address, so one address serves more
/// than the ephemeral range's worth of connections to several targets).
fn bind_source(socket: &socket2::Socket, source: &socket2::SockAddr) -> io::Result<()> {
    if source.is_ipv4() {
        // SAFETY: our socket and a valid option value (Linux 4.2+; harmless if unknown).
        unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(socket),
                libc::IPPROTO_IP,
                libc::IP_BIND_ADDRESS_NO_PORT,
                (&ONE as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
    socket.bind(source)
}

/// The linked SQEs that make slot `i`'s direct socket (table index `index`; a UDP one where
/// the target says datagrams) and connect it to `target`, from `source` if given: the socket, `TCP_NODELAY`, the source address with its
/// port left to the connect (as [`bind_source`]), the connect. A link that fails completes
/// with its error and the connect comes back cancelled.
pub(super) fn direct_connect(
    i: usize,
    index: u32,
    (target, datagrams): (&socket2::SockAddr, bool),
    source: Option<&socket2::SockAddr>,
) -> Vec<squeue::Entry> {
    let fixed = types::Fixed(index);
    let option = |level: i32, name: i32| {
        let one = (&ONE as *const libc::c_int).cast();
        opcode::SetSockOpt::new(
            fixed,
            level as u32,
            name as u32,
            one,
            std::mem::size_of::<libc::c_int>() as u32,
        )
        .build()
        .flags(LINK_QUIET)
        .user_data(user_data(i, OP_SOCKET))
    };
    let family = i32::from(target.family());
    let kind = if datagrams { libc::SOCK_DGRAM } else { libc::SOCK_STREAM };
    let slot =
        types::DestinationSlot::try_from_slot_target(index).expect("a table index is below u32::MAX - 2");
    let mut chain = vec![
        opcode::Socket::new(family, kind | libc::SOCK_NONBLOCK, 0)
            .file_index(Some(slot))
            .build()
            .flags(LINK_QUIET)
            .user_data(user_data(i, OP_SOCKET)),
    ];
    // A Unix or UDP socket has no Nagle to turn off (the option would fail, and the chain
    // with it).
    if family != libc::AF_UNIX && !datagrams {
        chain.push(option(libc::IPPROTO_TCP, libc::TCP_NODELAY));
    }
    if let Some(source) = source {
        if source.is_ipv4() {
            chain.push(option(libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT));
        }
        chain.push(
            opcode::Bind::new(fixed, source.as_ptr().cast(), source.len())
                .build()
                .flags(LINK_QUIET)
                .user_data(user_data(i, OP_BIND)),
        );
    }
    chain.push(
        opcode::Connect::new(fixed, target.as_ptr().cast(), target.len())
            .build()
            .user_data(user_data(i, OP_CONNECT)),
    );
    chain
}

/// An SQE that closes direct descriptor `index` of slot `i`'s ring.
pub(super) fn close_fixed(index: u32, i: usize) -> squeue::Entry {
    opcode::Close::new(types::Fixed(index)).build().user_data(user_data(i, OP_QUIET))
}
