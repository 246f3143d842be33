//! What the minimal client loops (`minimal_loop.rs`, `minimal_h2.rs`) share: `conns` connected
//! sockets registered as the ring's direct descriptors (connection i is index i, no file
//! lookup per operation, as wirebench's), a provided-buffer ring, and the multishot receive
//! armed on a connection (its completions' user data `(i << 1) | 1`).

use io_uring::{IoUring, opcode, types};
use wirebench::engine::bufring::BufRing;

/// The allocator wirebench's binary uses (src/main.rs), so a floor allocates as it does (the
/// TLS floor's rustls allocates per record).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: wirebench::allocator::Mimalloc = wirebench::allocator::Mimalloc;

/// The sockets (kept open while the ring uses them), the ring, its buffers.
pub struct Sockets {
    pub streams: Vec<std::net::TcpStream>,
    pub ring: IoUring,
    pub bufs: BufRing,
}

/// `conns` connections to `addr`, `TCP_NODELAY`, in a ring's table.
pub fn connect(addr: &str, conns: usize) -> Sockets {
    let streams: Vec<std::net::TcpStream> = (0..conns)
        .map(|_| {
            let s = std::net::TcpStream::connect(addr).expect("connect");
            s.set_nodelay(true).unwrap();
            s
        })
        .collect();
    let ring = wirebench::engine::rings::ring(4096, 8192).expect("ring");
    let bufs = BufRing::register(&ring, 0, 1024, 4096).expect("buffer ring");
    let fds: Vec<i32> = streams.iter().map(std::os::fd::AsRawFd::as_raw_fd).collect();
    ring.submitter().register_files(&fds).expect("a table of direct descriptors");
    Sockets { streams, ring, bufs }
}

/// Arm connection `i`'s multishot receive.
pub fn arm(ring: &mut IoUring, i: usize) {
    let sqe = opcode::RecvMulti::new(types::Fixed(i as u32), 0).build().user_data(((i as u64) << 1) | 1);
    // SAFETY: the buffers are the ring's.
    unsafe { ring.submission().push(&sqe).expect("room") };
}
