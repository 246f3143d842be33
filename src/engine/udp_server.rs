//! `serve udp`'s cores: one UDP socket a core in an `SO_REUSEPORT` group (the kernel keeps
//! each client on one of them, by its address), datagrams read a batch at a time with
//! `recvmmsg`, each handed to the core's answerer ([`DatagramServer`]: the protocol's, sans-IO)
//! and the answers written back with `sendmmsg`. Blocking calls with a receive timeout, so a
//! core looks at its stop flag every [`SERVER_POLL`]: there is nothing else for it to wait on
//! (no connection, no timer).

use super::{EngineError, SERVER_POLL, ServerHandle};
use crate::codec::{Answered, BoxedDatagramServer};
use crate::stats::ServerTally;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Datagrams read (and answered) per call.
const BATCH: usize = 64;
/// A receive's buffer: the largest datagram whole.
const DATAGRAM_MAX: usize = 64 * 1024;
/// The socket buffers asked for: a burst of many clients' requests is held, not dropped.
const SOCKET_BUFFER: usize = 4 << 20;
/// Tries to write a batch's answers when the socket takes part of them (a full send buffer).
const SEND_TRIES: usize = 16;

/// Start `answerer` on `cores`, one socket each at `addr` (port 0: one picked, the same for all).
pub fn start_server(
    addr: SocketAddr,
    cores: &[usize],
    answerer: BoxedDatagramServer,
    stop: Arc<AtomicBool>,
) -> Result<ServerHandle, EngineError> {
    let listen_error = |addr: SocketAddr| move |source| EngineError::Listen { addr: addr.into(), source };
    let first = super::unclaimed(addr, socket2::Type::DGRAM)
        .and_then(|()| socket(addr))
        .map_err(listen_error(addr))?;
    let bound = first.local_addr().map_err(listen_error(addr))?;
    let mut sockets = vec![first];
    for _ in 1..cores.len() {
        sockets.push(socket(bound).map_err(listen_error(bound))?);
    }
    let mut threads = Vec::new();
    for (&cpu, sock) in cores.iter().zip(sockets) {
        let (stop, answerer) = (stop.clone(), answerer.boxed_clone());
        let handle = std::thread::Builder::new()
            .name(format!("wirebench-serve-udp-{cpu}"))
            .spawn(move || {
                super::catching(
                    cpu,
                    || {},
                    || {
                        super::pin_current_thread(cpu)?;
                        serve_core(cpu, &sock, answerer, &stop)
                            .map_err(|source| EngineError::Executor { cpu, source })
                    },
                )
            })
            .map_err(|source| EngineError::Executor { cpu, source })?;
        threads.push((cpu, handle));
    }
    Ok(ServerHandle { addrs: vec![crate::plan::Endpoint::Udp(bound)], stop, threads })
}

/// A core's socket: in the port's `SO_REUSEPORT` group, its buffers as large as allowed, its
/// receives timing out after [`SERVER_POLL`].
fn socket(at: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    let sock = socket2::Socket::new(socket2::Domain::for_address(at), socket2::Type::DGRAM.cloexec(), None)?;
    sock.set_reuse_port(true)?;
    let _ = sock.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = sock.set_send_buffer_size(SOCKET_BUFFER);
    sock.set_read_timeout(Some(SERVER_POLL))?;
    // A send buffer that stays full gives up on the batch's rest after a while, not never.
    sock.set_write_timeout(Some(SERVER_POLL))?;
    sock.bind(&at.into())?;
    Ok(sock.into())
}

/// One core: read a batch, answer it, until the stop flag is set.
fn serve_core(
    cpu: usize,
    sock: &std::net::UdpSocket,
    mut answerer: BoxedDatagramServer,
    stop: &AtomicBool,
) -> std::io::Result<ServerTally> {
    let clock = super::sys::ThreadClock::start();
    let mut tally = ServerTally { core: cpu, ..ServerTally::default() };
    let fd = sock.as_raw_fd();
    let mut bufs: Vec<Vec<u8>> = (0..BATCH).map(|_| vec![0u8; DATAGRAM_MAX]).collect();
    let mut answers: Vec<Vec<u8>> = (0..BATCH).map(|_| Vec::new()).collect();
    // SAFETY: all-zero bytes are a valid sockaddr_storage.
    let mut names: Vec<libc::sockaddr_storage> = (0..BATCH).map(|_| unsafe { std::mem::zeroed() }).collect();
    while !stop.load(Ordering::Relaxed) {
        let n = receive(fd, &mut bufs, &mut names)?;
        let mut to_send = Vec::with_capacity(n.len());
        for (j, &len) in n.iter().enumerate() {
            tally.rx += len as u64;
            answers[j].clear();
            let Some(from) = super::udp::address_of(&names[j]) else { continue };
            match answerer.answer(from, &bufs[j][..len], &mut answers[j]) {
                Answered::Request => tally.requests += 1,
                Answered::SetUp => tally.connections += 1,
                Answered::Dropped => {}
            }
            if !answers[j].is_empty() {
                to_send.push(j);
            }
        }
        tally.tx += send(fd, &answers, &names, &to_send)?;
    }
    (tally.cpu, tally.wall) = clock.since(crate::clock::Instant::now());
    Ok(tally)
}

/// The length of the address in `name` by its family.
fn name_len(name: &libc::sockaddr_storage) -> libc::socklen_t {
    let len = match i32::from(name.ss_family) {
        libc::AF_INET6 => std::mem::size_of::<libc::sockaddr_in6>(),
        _ => std::mem::size_of::<libc::sockaddr_in>(),
    };
    len as libc::socklen_t
}

/// One `recvmmsg`: the lengths of the datagrams it read into `bufs` (their senders in
/// `names`); none when the timeout passed first.
fn receive(
    fd: i32,
    bufs: &mut [Vec<u8>],
    names: &mut [libc::sockaddr_storage],
) -> std::io::Result<Vec<usize>> {
    let mut iovs: Vec<libc::iovec> =
        bufs.iter_mut().map(|b| libc::iovec { iov_base: b.as_mut_ptr().cast(), iov_len: b.len() }).collect();
    // SAFETY: all-zero bytes are a valid mmsghdr; each is pointed at its buffer and name below.
    let mut msgs: Vec<libc::mmsghdr> = (0..bufs.len()).map(|_| unsafe { std::mem::zeroed() }).collect();
    for ((m, iov), name) in msgs.iter_mut().zip(iovs.iter_mut()).zip(names.iter_mut()) {
        m.msg_hdr.msg_iov = iov;
        m.msg_hdr.msg_iovlen = 1;
        m.msg_hdr.msg_name = (name as *mut libc::sockaddr_storage).cast();
        m.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    }
    // SAFETY: every header points into buffers that outlive the call.
    let n = unsafe {
        libc::recvmmsg(
            fd,
            msgs.as_mut_ptr(),
            msgs.len() as libc::c_uint,
            libc::MSG_WAITFORONE,
            std::ptr::null_mut(),
        )
    };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        return match e.kind() {
            std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted => Ok(Vec::new()),
            // An ICMP error from an earlier answer's client (gone): nothing was read.
            std::io::ErrorKind::ConnectionRefused => Ok(Vec::new()),
            _ => Err(e),
        };
    }
    Ok(msgs[..n as usize].iter().map(|m| m.msg_len as usize).collect())
}

/// `sendmmsg` the answers `which` to their senders; the bytes the socket took. A batch the
/// socket takes part of is sent on from there, [`SEND_TRIES`] times at most (an answer it
/// will not take is dropped, as the network may drop it: the client's timeout counts it).
fn send(
    fd: i32,
    answers: &[Vec<u8>],
    names: &[libc::sockaddr_storage],
    which: &[usize],
) -> std::io::Result<u64> {
    let mut iovs: Vec<libc::iovec> = which
        .iter()
        .map(|&j| libc::iovec {
            iov_base: answers[j].as_ptr() as *mut libc::c_void,
            iov_len: answers[j].len(),
        })
        .collect();
    // SAFETY: all-zero bytes are a valid mmsghdr; each is pointed at its answer and name below.
    let mut msgs: Vec<libc::mmsghdr> = (0..which.len()).map(|_| unsafe { std::mem::zeroed() }).collect();
    for ((m, iov), &j) in msgs.iter_mut().zip(iovs.iter_mut()).zip(which) {
        m.msg_hdr.msg_iov = iov;
        m.msg_hdr.msg_iovlen = 1;
        m.msg_hdr.msg_name =
            (&names[j] as *const libc::sockaddr_storage as *mut libc::sockaddr_storage).cast();
        m.msg_hdr.msg_namelen = name_len(&names[j]);
    }
    let (mut from, mut tx) = (0, 0u64);
    for _ in 0..SEND_TRIES {
        if from == msgs.len() {
            break;
        }
        // SAFETY: every header points into buffers that outlive the call.
        let n =
            unsafe { libc::sendmmsg(fd, msgs[from..].as_mut_ptr(), (msgs.len() - from) as libc::c_uint, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            match e.kind() {
                std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock => continue,
                // This answer's client is unreachable: the others go on.
                _ if from + 1 < msgs.len() || e.raw_os_error() != Some(libc::EBADF) => {
                    from += 1;
                    continue;
                }
                _ => return Err(e),
            }
        }
        tx += msgs[from..from + n as usize].iter().map(|m| u64::from(m.msg_len)).sum::<u64>();
        from += n as usize;
    }
    Ok(tx)
}
