//! The floor for an HTTP/1.1 keep-alive client on io_uring: no state machine, no codec, no
//! statistics — N connections (direct descriptors), a fixed `GET /`, one multishot receive per
//! socket on a provided-buffer ring, the next request sent when a whole response (all the same length,
//! learnt from one request first) has arrived. `tools/vs-peers.sh` runs it beside the real
//! clients, so wirebench's generator can be measured against the least a client can do.
//!
//! With `timed` as a fourth argument it also does the one thing every load generator must do
//! beyond this loop: time each request. A send is stamped with the clock read once per wake
//! (as wirebench reads it, `wirebench::clock`), and each whole response's latency from its
//! send to the wake that brought it is recorded in an HDR histogram (to an hour in ns, 3
//! digits, as wirebench's). Still no parsing, no counts, no deadlines: the floor of a client that
//! measures latency at all.
//!
//! Usage: cargo bench --bench minimal_loop -- HOST:PORT [CONNECTIONS 64] [SECONDS 5] [timed]
//! Prints `requests N in S s = R/s` (the line vs-peers reads); timed, then `p50 … p99 …`.

use io_uring::{cqueue, opcode, types};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

mod common;
use common::arm;

const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
/// The longest latency the histogram holds, in ns (an hour, as wirebench's).
const MAX_NS: u64 = 3_600_000_000_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let addr = args.first().expect("HOST:PORT").clone();
    let conns: usize = args.get(1).map_or(64, |a| a.parse().expect("connections"));
    let secs: f64 = args.get(2).map_or(5.0, |a| a.parse().expect("seconds"));
    let timed = args.get(3).is_some_and(|a| a == "timed");
    // Learn the response's length from one request.
    let response_len = {
        let mut s = std::net::TcpStream::connect(&addr).expect("connect");
        s.write_all(REQUEST).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut buf = vec![0u8; 65536];
        let mut got = 0;
        loop {
            got += s.read(&mut buf[got..]).expect("a response");
            let text = String::from_utf8_lossy(&buf[..got]);
            if let Some(head_end) = text.find("\r\n\r\n") {
                let len: usize = text[..head_end]
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .expect("Content-Length");
                if got >= head_end + 4 + len {
                    break head_end + 4 + len;
                }
            }
        }
    };
    // The sockets as direct descriptors (the ring's own table, as wirebench's): connection i is
    // index i, no file lookup per operation.
    let common::Sockets { streams, mut ring, mut bufs } = common::connect(&addr, conns);
    let send = |ring: &mut io_uring::IoUring, i: usize| {
        let sqe = opcode::Send::new(types::Fixed(i as u32), REQUEST.as_ptr(), REQUEST.len() as u32)
            .build()
            .user_data((i as u64) << 1);
        // SAFETY: REQUEST is static.
        unsafe { ring.submission().push(&sqe).expect("room") };
    };
    for i in 0..streams.len() {
        arm(&mut ring, i);
        send(&mut ring, i);
    }
    let mut pending = vec![0usize; conns];
    let mut in_flight = conns;
    let mut done: u64 = 0;
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(secs);
    let mut sending = true;
    let mut completions = Vec::new();
    // Timed: each connection's request's send stamp (ns), and the latencies.
    let mut sent_at = vec![wirebench::clock::Instant::now().as_nanos(); conns];
    let mut latency = hdrhistogram::Histogram::<u64>::new_with_max(MAX_NS, 3).unwrap();
    while in_flight > 0 {
        ring.submit_and_wait(1).expect("enter");
        completions.clear();
        completions.extend(ring.completion().map(|c| (c.user_data(), c.result(), c.flags())));
        if sending && Instant::now() >= end {
            sending = false;
        }
        let now = if timed { wirebench::clock::Instant::now().as_nanos() } else { 0 };
        for &(data, result, flags) in &completions {
            let (i, recv) = ((data >> 1) as usize, data & 1 == 1);
            if !recv {
                assert!(result == REQUEST.len() as i32, "send: {result}");
                continue;
            }
            if let Some(bid) = cqueue::buffer_select(flags) {
                bufs.give_back(bid);
            }
            assert!(result > 0 || result == -libc::ENOBUFS, "receive: {result}");
            if !cqueue::more(flags) {
                arm(&mut ring, i);
            }
            pending[i] += result.max(0) as usize;
            while pending[i] >= response_len {
                pending[i] -= response_len;
                done += 1;
                if timed {
                    latency.saturating_record(now.saturating_sub(sent_at[i]).clamp(1, MAX_NS));
                    sent_at[i] = now;
                }
                if sending {
                    send(&mut ring, i);
                } else {
                    in_flight -= 1;
                }
            }
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!("requests {done} in {elapsed:.2} s = {:.0}/s", done as f64 / elapsed);
    if timed {
        let us = |q: f64| latency.value_at_quantile(q) as f64 / 1e3;
        println!("p50 {:.0} µs p99 {:.0} µs ({} timed)", us(0.5), us(0.99), latency.len());
    }
}
