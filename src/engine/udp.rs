//! UDP for the QUIC engine: its sockets, and the one message header (buffer, address, control
//! message) a send or a receive on the ring points into — with GSO (`UDP_SEGMENT`: one send
//! carries several datagrams of one size, cut by the kernel) and GRO (`UDP_GRO`: one receive
//! gives several datagrams of one flow, back to back, and their size in a control message).
//!
//! Both are Linux's, asked for and used where the kernel has them: a socket that refuses GRO
//! receives a datagram at a time; a send the kernel refuses to segment makes its sender send
//! one at a time after (QUIC retransmits what was refused).

use bytes::BytesMut;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A datagram's largest size this side sends or takes alone (QUIC's are at most the path's MTU).
pub const DATAGRAM: usize = 2048;
/// Datagrams one send may carry with GSO (quinn's `poll_transmit` fills as many of one size).
pub const GSO_DATAGRAMS: usize = 10;
/// What one GRO receive may hold: the kernel coalesces up to 64 KiB of one flow.
pub const GRO_BYTES: usize = 65_536;

const SOL_UDP: libc::c_int = 17;
/// `UDP_SEGMENT`: a send's datagrams' size, a control message at level `SOL_UDP`.
const UDP_SEGMENT: libc::c_int = 103;
/// `UDP_GRO`: a socket option (receive coalesced datagrams), and the control message giving
/// their size.
const UDP_GRO: libc::c_int = 104;

/// The receive buffer a QUIC socket asks for: a burst of a window's datagrams (a 1 MiB body
/// arrives faster than one loop turn reads it) is held, not dropped, as QUIC servers do
/// (quic-go asks for 7 MiB). Past `net.core.rmem_max` it takes what it is given (root: forced).
const SOCKET_BUFFER: usize = 4 << 20;

fn set_int(fd: libc::c_int, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> bool {
    let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: plain setsockopt on a descriptor of ours with an int.
    unsafe { libc::setsockopt(fd, level, name, (&value as *const libc::c_int).cast(), len) == 0 }
}

/// Ask for [`SOCKET_BUFFER`] both ways, and for GRO; best effort. Returns whether GRO is on.
fn prepare(sock: &socket2::Socket) -> bool {
    let fd = sock.as_raw_fd();
    for (normal, forced) in [(libc::SO_RCVBUF, libc::SO_RCVBUFFORCE), (libc::SO_SNDBUF, libc::SO_SNDBUFFORCE)]
    {
        if !set_int(fd, libc::SOL_SOCKET, forced, SOCKET_BUFFER as libc::c_int) {
            set_int(fd, libc::SOL_SOCKET, normal, SOCKET_BUFFER as libc::c_int);
        }
    }
    set_int(fd, SOL_UDP, UDP_GRO, 1)
}

fn socket(at: SocketAddr) -> std::io::Result<socket2::Socket> {
    let domain = if at.is_ipv4() { socket2::Domain::IPV4 } else { socket2::Domain::IPV6 };
    socket2::Socket::new(domain, socket2::Type::DGRAM.cloexec(), None)
}

/// A UDP socket connected to `remote` (a client's), from `source` if given (`--bind`: its
/// port the kernel's pick), GRO asked for. Blocking, as io_uring wants it: a send the
/// socket's buffer cannot take yet waits in the ring for room (a non-blocking one would fail
/// with `EAGAIN`, and the datagram would be lost to QUIC's retransmission).
pub fn connected(remote: SocketAddr, source: Option<std::net::IpAddr>) -> std::io::Result<OwnedFd> {
    let sock = socket(remote)?;
    prepare(&sock);
    if let Some(ip) = source {
        sock.bind(&SocketAddr::new(ip, 0).into())
            .map_err(|e| std::io::Error::new(e.kind(), format!("binding the source address {ip}: {e}")))?;
    }
    sock.connect(&remote.into())?;
    // SAFETY: the descriptor is socket2's, handed over whole.
    Ok(unsafe { OwnedFd::from_raw_fd(std::os::fd::IntoRawFd::into_raw_fd(sock)) })
}

/// A UDP socket bound to `at` (a server core's), sharing its port (`SO_REUSEPORT`), GRO asked
/// for.
pub fn bound(at: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    let sock = socket(at)?;
    sock.set_reuse_port(true)?;
    prepare(&sock);
    sock.bind(&at.into())?;
    Ok(sock.into())
}

/// The size of the datagrams a GRO receive's `control` messages say it holds (`None`: one
/// datagram, or no GRO).
pub fn gro_size(control: &[u8]) -> Option<usize> {
    // cmsghdr: a length (usize), a level and a type (c_int each), then the data; each message
    // aligned to a usize. Bounded: each step moves on by at least a header, and a length
    // past the end (or past usize) ends it.
    let head = std::mem::size_of::<libc::cmsghdr>();
    let mut at = 0;
    while at + head <= control.len() {
        let word = std::mem::size_of::<usize>();
        let len = usize::from_ne_bytes(control[at..at + word].try_into().ok()?);
        let level = libc::c_int::from_ne_bytes(control[at + word..at + word + 4].try_into().ok()?);
        let kind = libc::c_int::from_ne_bytes(control[at + word + 4..at + word + 8].try_into().ok()?);
        if len < head || at.checked_add(len).is_none_or(|end| end > control.len()) {
            return None;
        }
        if level == SOL_UDP && kind == UDP_GRO && len >= head + 4 {
            let size = libc::c_int::from_ne_bytes(control[at + head..at + head + 4].try_into().ok()?);
            return usize::try_from(size).ok().filter(|&s| s > 0);
        }
        at = at.checked_add(len.checked_next_multiple_of(word)?)?;
    }
    None
}

/// The datagrams of one receive of `data`, GRO's `size` each (the last may be shorter), each
/// a view of `data`'s one copy (what quinn takes), not a copy of its own.
pub fn datagrams(mut data: BytesMut, size: Option<usize>) -> impl Iterator<Item = BytesMut> {
    let size = size.unwrap_or(data.len()).max(1);
    std::iter::from_fn(move || (!data.is_empty()).then(|| data.split_to(size.min(data.len()))))
}

/// What one send or receive on the ring points into: the datagrams, their address (an
/// unconnected socket's), the header the kernel reads or fills, and a control message
/// (GSO's segment size out, GRO's in). Boxed: nothing moves while an operation is in flight.
pub struct Msg {
    pub buf: Vec<u8>,
    addr: libc::sockaddr_storage,
    iov: libc::iovec,
    pub hdr: libc::msghdr,
    /// Room for a control message or two (aligned).
    control: [u64; 8],
}

impl Msg {
    /// A message of `size` octets.
    pub fn new(size: usize) -> Box<Msg> {
        // SAFETY: all-zero is a valid sockaddr_storage, iovec and msghdr.
        let mut m: Box<Msg> = Box::new(Msg {
            buf: vec![0; size],
            addr: unsafe { std::mem::zeroed() },
            iov: unsafe { std::mem::zeroed() },
            hdr: unsafe { std::mem::zeroed() },
            control: [0; 8],
        });
        m.for_receive(false);
        m
    }

    /// Ready to receive again: the whole buffer, the address (`named`: an unconnected
    /// socket's) and the control message's room.
    pub fn for_receive(&mut self, named: bool) {
        let len = self.buf.len();
        self.point(len, named);
        self.hdr.msg_control = self.control.as_mut_ptr().cast();
        self.hdr.msg_controllen = std::mem::size_of_val(&self.control);
    }

    fn point(&mut self, len: usize, named: bool) {
        self.iov = libc::iovec { iov_base: self.buf.as_mut_ptr().cast(), iov_len: len };
        self.hdr.msg_iov = &mut self.iov;
        self.hdr.msg_iovlen = 1;
        if named {
            self.hdr.msg_name = (&mut self.addr as *mut libc::sockaddr_storage).cast();
            self.hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as u32;
        } else {
            self.hdr.msg_name = std::ptr::null_mut();
            self.hdr.msg_namelen = 0;
        }
    }

    /// Send the first `len` octets of the buffer (to `to`, on an unconnected socket), as
    /// datagrams of `segment` octets each when there are several (GSO).
    pub fn for_send(&mut self, len: usize, to: Option<SocketAddr>, segment: Option<usize>) {
        self.point(len, to.is_some());
        if let Some(to) = to {
            let to = socket2::SockAddr::from(to);
            // SAFETY: `to` is a valid address of `to.len()` octets, at most a sockaddr_storage.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    to.as_ptr().cast::<u8>(),
                    (&mut self.addr as *mut libc::sockaddr_storage).cast(),
                    to.len() as usize,
                );
            }
            self.hdr.msg_namelen = to.len();
        }
        match segment.filter(|&s| s < len) {
            Some(segment) => {
                self.control = [0; 8];
                self.hdr.msg_control = self.control.as_mut_ptr().cast();
                // SAFETY: CMSG_SPACE of a u16 (16 on 64-bit) fits `control` (64 octets); the
                // header points at it, so CMSG_FIRSTHDR is a valid cmsghdr to fill.
                unsafe {
                    self.hdr.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) as usize;
                    let cmsg = libc::CMSG_FIRSTHDR(&self.hdr);
                    (*cmsg).cmsg_level = SOL_UDP;
                    (*cmsg).cmsg_type = UDP_SEGMENT;
                    (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as usize;
                    std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), segment as u16);
                }
            }
            None => {
                self.hdr.msg_control = std::ptr::null_mut();
                self.hdr.msg_controllen = 0;
            }
        }
    }

    /// After a receive: the size of the datagrams it holds, from GRO's control message.
    pub fn gro_size(&self) -> Option<usize> {
        let len = self.hdr.msg_controllen.min(std::mem::size_of_val(&self.control));
        // SAFETY: `control` is plain octets, `len` of them at most its size.
        let bytes = unsafe { std::slice::from_raw_parts(self.control.as_ptr().cast::<u8>(), len) };
        gro_size(bytes)
    }

    /// After a receive on an unconnected socket: its sender.
    pub fn source(&self) -> Option<SocketAddr> {
        address_of(&self.addr)
    }
}

/// The sender's address a multishot receive wrote before its datagrams (`None`: not an IPv4
/// or IPv6 address, or cut short).
pub fn address_from(name: &[u8]) -> Option<SocketAddr> {
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let n = name.len().min(std::mem::size_of_val(&storage));
    // SAFETY: `n` octets fit in `storage`; plain octets into a plain C struct.
    unsafe {
        std::ptr::copy_nonoverlapping(
            name.as_ptr(),
            (&mut storage as *mut libc::sockaddr_storage).cast::<u8>(),
            n,
        )
    };
    let need = match i32::from(storage.ss_family) {
        libc::AF_INET => std::mem::size_of::<libc::sockaddr_in>(),
        libc::AF_INET6 => std::mem::size_of::<libc::sockaddr_in6>(),
        _ => return None,
    };
    if n < need {
        return None;
    }
    address_of(&storage)
}

/// The IP address and port a kernel wrote into `storage` (a receive's sender).
pub fn address_of(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    let at = storage as *const libc::sockaddr_storage;
    match i32::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the kernel wrote a sockaddr_in (its family says so).
            let a = unsafe { &*at.cast::<libc::sockaddr_in>() };
            let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::from((ip, u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the kernel wrote a sockaddr_in6 (its family says so).
            let a = unsafe { &*at.cast::<libc::sockaddr_in6>() };
            let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(SocketAddr::from((ip, u16::from_be(a.sin6_port))))
        }
        _ => None,
    }
}

/// A send the kernel refused for its segments (no GSO here): its sender sends one at a time.
pub fn refused_gso(result: i32) -> bool {
    matches!(-result, libc::EIO | libc::EINVAL | libc::EOPNOTSUPP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_senders_address_is_read_from_its_octets_or_is_none() {
        // SAFETY: all-zero is a valid sockaddr_in.
        let mut a: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        a.sin_family = libc::AF_INET as libc::sa_family_t;
        a.sin_port = 4433u16.to_be();
        a.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::new(127, 0, 0, 9)).to_be();
        // SAFETY: a plain C struct read as its octets.
        let octets = unsafe {
            std::slice::from_raw_parts(
                (&a as *const libc::sockaddr_in).cast::<u8>(),
                std::mem::size_of_val(&a),
            )
        };
        assert_eq!(address_from(octets), Some("127.0.0.9:4433".parse().unwrap()));
        let mut long = octets.to_vec();
        long.resize(300, 0xff);
        assert_eq!(address_from(&long), Some("127.0.0.9:4433".parse().unwrap()), "past the storage: cut");
        assert_eq!(address_from(&octets[..8]), None, "cut short");
        assert_eq!(address_from(&[]), None);
        assert_eq!(address_from(&[0u8; 16]), None, "no family");
    }

    fn cmsg(level: libc::c_int, kind: libc::c_int, data: &[u8]) -> Vec<u8> {
        let head = std::mem::size_of::<libc::cmsghdr>();
        let mut m = Vec::new();
        m.extend_from_slice(&(head + data.len()).to_ne_bytes());
        m.extend_from_slice(&level.to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(data);
        m.resize((head + data.len()).next_multiple_of(8), 0);
        m
    }

    #[test]
    fn the_gro_size_is_found_among_control_messages_and_garbage_is_not_read_past() {
        let gro = cmsg(SOL_UDP, UDP_GRO, &1200i32.to_ne_bytes());
        assert_eq!(gro_size(&gro), Some(1200));
        let other = cmsg(libc::SOL_IP, 8, &[1, 2, 3, 4]);
        assert_eq!(gro_size(&[other.clone(), gro.clone()].concat()), Some(1200));
        assert_eq!(gro_size(&other), None);
        assert_eq!(gro_size(&[]), None);
        // A length past the end, a length shorter than a header, a zero size: nothing.
        let mut long = gro.clone();
        long[0] = 200;
        assert_eq!(gro_size(&long), None);
        let mut short = gro.clone();
        short[..8].copy_from_slice(&3usize.to_ne_bytes());
        assert_eq!(gro_size(&short), None);
        // A length that wraps the offset round (a second message claiming usize::MAX − 23).
        let mut wrap = [cmsg(libc::SOL_IP, 8, &[0; 8]), cmsg(libc::SOL_IP, 8, &[0; 8])].concat();
        wrap[24..32].copy_from_slice(&(usize::MAX - 23).to_ne_bytes());
        assert_eq!(gro_size(&wrap), None);
        assert_eq!(gro_size(&cmsg(SOL_UDP, UDP_GRO, &0i32.to_ne_bytes())), None);
        // Every cut of the messages: never a panic.
        let both = [other, gro].concat();
        for cut in 0..both.len() {
            let _ = gro_size(&both[..cut]);
        }
    }

    #[test]
    fn a_receive_is_cut_into_its_datagrams() {
        let data = BytesMut::from(&[7u8; 2500][..]);
        let sizes: Vec<usize> = datagrams(data.clone(), Some(1200)).map(|d| d.len()).collect();
        assert_eq!(sizes, [1200, 1200, 100]);
        assert_eq!(datagrams(data, None).count(), 1);
        assert_eq!(datagrams(BytesMut::new(), None).count(), 0);
    }

    /// Over loopback, a GSO send to a GRO socket arrives as one receive of all its datagrams
    /// (or, on a kernel without either, as single datagrams): either way cut back into the
    /// same datagrams.
    #[test]
    fn gso_out_and_gro_in_give_back_the_same_datagrams() {
        let server = bound("127.0.0.1:0".parse().unwrap()).unwrap();
        let to = server.local_addr().unwrap();
        let client = connected(to, None).unwrap();
        let mut m = Msg::new(GSO_DATAGRAMS * DATAGRAM);
        for (i, b) in m.buf.iter_mut().take(3000).enumerate() {
            *b = i as u8;
        }
        m.for_send(3000, None, Some(1200));
        // SAFETY: a plain sendmsg on our socket with a header pointing into `m`.
        let sent = unsafe { libc::sendmsg(client.as_raw_fd(), &m.hdr, 0) };
        assert_eq!(sent, 3000, "{}", std::io::Error::last_os_error());
        server.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
        let mut got: Vec<Vec<u8>> = Vec::new();
        let mut r = Msg::new(GRO_BYTES);
        while got.iter().map(Vec::len).sum::<usize>() < 3000 {
            r.for_receive(true);
            // SAFETY: a plain recvmsg on our socket into `r`.
            let n = unsafe { libc::recvmsg(server.as_raw_fd(), &mut r.hdr, 0) };
            assert!(n > 0, "{}", std::io::Error::last_os_error());
            assert_eq!(r.source(), Some(client_addr(&client)));
            got.extend(datagrams(BytesMut::from(&r.buf[..n as usize]), r.gro_size()).map(|d| d.to_vec()));
        }
        assert_eq!(got.iter().map(Vec::len).collect::<Vec<_>>(), [1200, 1200, 600]);
        assert_eq!(got.concat(), m.buf[..3000]);
    }

    fn client_addr(fd: &OwnedFd) -> SocketAddr {
        let sock = socket2::SockRef::from(fd);
        sock.local_addr().unwrap().as_socket().unwrap()
    }
}
