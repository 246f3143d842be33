//! The floor for an HTTP/1.1 keep-alive server on io_uring: no state machine, no codec, no
//! deadlines, no counts — a multishot accept into direct descriptors, one multishot receive
//! per connection on a provided-buffer ring, a fixed 50-byte answer (`serve http`'s) sent for
//! each request head that ends in the bytes received. `tools/vs-peers.sh` (part 2b) puts it beside nginx and
//! `serve http` at the same offered load, so the built-in server's CPU per request can be told
//! apart from what any io_uring server pays on this machine (the wake-up after each sleep).
//!
//! Usage: cargo bench --bench minimal_server -- HOST:PORT [SECONDS 3600]
//! Prints `listening on HOST:PORT`, serves until SECONDS pass or the process is killed.

use io_uring::{cqueue, opcode, types};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};
use wirebench::engine::bufring::BufRing;

/// The allocator `serve`'s binary uses (src/main.rs), so the floor allocates as it does.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: wirebench::allocator::Mimalloc = wirebench::allocator::Mimalloc;

const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nHello World";
const ACCEPT: u64 = u64::MAX;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let addr = args.first().expect("HOST:PORT").clone();
    let secs: u64 = args.get(1).map_or(3600, |a| a.parse().expect("seconds"));
    let listener = std::net::TcpListener::bind(&addr).expect("bind");
    println!("listening on {}", listener.local_addr().unwrap());
    let mut ring = wirebench::engine::rings::ring(4096, 8192).expect("ring");
    let mut bufs = BufRing::register(&ring, 0, 1024, 4096).expect("buffer ring");
    let push = |ring: &mut io_uring::IoUring, sqe: io_uring::squeue::Entry| {
        // SAFETY: every buffer an SQE points at (ANSWER, the ring's buffers) outlives it.
        while unsafe { ring.submission().push(&sqe) }.is_err() {
            ring.submit().expect("submit");
        }
    };
    ring.submitter().register_files_sparse(16_384).expect("a table of direct descriptors");
    // TCP_NODELAY on the listener: accepted sockets inherit it.
    let one: libc::c_int = 1;
    // SAFETY: our listener; plain setsockopt.
    unsafe {
        libc::setsockopt(
            listener.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&one as *const libc::c_int).cast(),
            4,
        )
    };
    let accept = || {
        opcode::AcceptMulti::new(types::Fd(listener.as_raw_fd()))
            .allocate_file_index(true)
            .build()
            .user_data(ACCEPT)
    };
    push(&mut ring, accept());
    // Per connection (by descriptor): the tail of a request head split across receives.
    let mut tails: Vec<Vec<u8>> = Vec::new();
    let end = Instant::now() + Duration::from_secs(secs);
    let mut completions = Vec::new();
    while Instant::now() < end {
        let ts = types::Timespec::from(Duration::from_millis(100));
        let _ = ring.submitter().submit_with_args(1, &types::SubmitArgs::new().timespec(&ts));
        completions.clear();
        completions.extend(ring.completion().map(|c| (c.user_data(), c.result(), c.flags())));
        for &(data, result, flags) in &completions {
            if data == ACCEPT {
                if !cqueue::more(flags) {
                    push(&mut ring, accept());
                }
                if result >= 0 {
                    let fd = result;
                    if tails.len() <= fd as usize {
                        tails.resize(fd as usize + 1, Vec::new());
                    }
                    push(
                        &mut ring,
                        opcode::RecvMulti::new(types::Fixed(fd as u32), 0).build().user_data(fd as u64),
                    );
                }
                continue;
            }
            let fd = data as i32;
            if data >> 32 == 1 {
                continue; // a send's completion
            }
            let mut answers = 0;
            if let Some(bid) = cqueue::buffer_select(flags) {
                let tail = &mut tails[fd as usize];
                tail.extend_from_slice(bufs.data(bid, result.max(0) as usize));
                bufs.give_back(bid);
                while let Some(at) = tail.windows(4).position(|w| w == b"\r\n\r\n") {
                    tail.drain(..at + 4);
                    answers += 1;
                }
            }
            for _ in 0..answers {
                let sqe = opcode::Send::new(types::Fixed(fd as u32), ANSWER.as_ptr(), ANSWER.len() as u32)
                    .flags(libc::MSG_NOSIGNAL)
                    .build()
                    .user_data((1 << 32) | fd as u64);
                push(&mut ring, sqe);
            }
            if result <= 0 && result != -libc::ENOBUFS {
                // The connection is over; its receive has ended (no MORE).
                push(&mut ring, opcode::Close::new(types::Fixed(fd as u32)).build().user_data(1 << 32));
                tails[fd as usize].clear();
            } else if !cqueue::more(flags) {
                push(
                    &mut ring,
                    opcode::RecvMulti::new(types::Fixed(fd as u32), 0).build().user_data(fd as u64),
                );
            }
        }
    }
}
