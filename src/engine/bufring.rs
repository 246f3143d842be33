//! A provided-buffer ring (io_uring's `IORING_REGISTER_PBUF_RING`, Linux 5.19+): buffers the
//! kernel picks from when a multishot receive completes, so a connection waiting for bytes
//! holds no buffer of its own. The engine copies each completion's bytes into the connection's
//! machine and gives the buffer straight back, so a ring of a few hundred buffers serves any
//! number of connections.

use io_uring::IoUring;
use io_uring::types::BufRingEntry;
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

pub struct BufRing {
    /// The ring of entries the kernel reads (page-aligned, its own mapping).
    entries: *mut BufRingEntry,
    mapped: usize,
    count: u16,
    size: usize,
    /// The buffers themselves, `count` × `size`.
    bufs: Box<[u8]>,
    /// Our copy of the ring's tail (entries handed to the kernel so far, wrapping).
    tail: u16,
    pub group: u16,
}

impl BufRing {
    /// Register `count` (a power of two, at most 32768) buffers of `size` bytes as group
    /// `group` of `ring`.
    pub fn register(ring: &IoUring, group: u16, count: u16, size: usize) -> io::Result<BufRing> {
        assert!(count.is_power_of_two(), "a buffer ring's size is a power of two");
        let mapped = usize::from(count) * std::mem::size_of::<BufRingEntry>();
        // SAFETY: an anonymous private mapping: page-aligned, zeroed, ours.
        let mem = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if mem == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut ring_buf = BufRing {
            entries: mem.cast(),
            mapped,
            count,
            size,
            bufs: vec![0u8; usize::from(count) * size].into_boxed_slice(),
            tail: 0,
            group,
        };
        // SAFETY: the mapping holds `count` entries and lives as long as `ring_buf`, which
        // the engine drops only after the ring (or leaks, if the ring failed).
        unsafe { ring.submitter().register_buf_ring_with_flags(mem as u64, count, group, 0)? };
        for bid in 0..count {
            ring_buf.push(bid);
        }
        ring_buf.publish();
        Ok(ring_buf)
    }

    fn push(&mut self, bid: u16) {
        let at = usize::from(self.tail & (self.count - 1));
        let addr = self.bufs.as_mut_ptr() as u64 + u64::from(bid) * self.size as u64;
        // SAFETY: `at` < count, inside the mapping; the kernel reads entries only up to the
        // published tail, and this one is past it until `publish`.
        let entry = unsafe { &mut *self.entries.add(at) };
        entry.set_addr(addr);
        entry.set_len(self.size as u32);
        entry.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    fn publish(&self) {
        // SAFETY: the tail field of the first entry, in our mapping; the kernel reads it
        // concurrently, hence the atomic store with release ordering (liburing does the same).
        unsafe {
            let tail = BufRingEntry::tail(self.entries) as *const AtomicU16;
            (*tail).store(self.tail, Ordering::Release);
        }
    }

    /// The `len` bytes a completion put in buffer `bid`.
    pub fn data(&self, bid: u16, len: usize) -> &[u8] {
        let start = usize::from(bid) * self.size;
        &self.bufs[start..start + len.min(self.size)]
    }

    /// Buffer `bid` is free again.
    pub fn give_back(&mut self, bid: u16) {
        self.push(bid);
        self.publish();
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: our mapping; the ring that used it is gone (see `register`).
        unsafe { libc::munmap(self.entries.cast(), self.mapped) };
    }
}
