//! The binary's global allocator (the default feature `mimalloc`; `--no-default-features`
//! keeps glibc's): mimalloc, called as Rust's own `System` allocator calls `malloc`.
//!
//! Why mimalloc: quinn allocates and frees its state for every HTTP/3 stream, and mimalloc
//! costs the HTTP/3 client 0.85× the CPU a request of glibc's; without transparent huge pages
//! (libmimalloc's `no_thp`, and the process's THP off in `main`) an idle connection costs what
//! it does with glibc (docs/performance.md, `tools/alloc-compare.sh`).
//!
//! Why not the `mimalloc` crate's `MiMalloc`: it asks `mi_malloc_aligned` for every block,
//! whose fast path takes only blocks of at most 1 KiB. A larger one of a size that is not a
//! power of two (a QUIC packet's 1,200–1,500 octets) is over-allocated and aligned by hand,
//! and its page marked as holding aligned blocks, which every later `free` on it checks: 110
//! instructions an allocation in the HTTP/3 client. Every block mimalloc hands out is aligned
//! to 16 octets, or, the 8-octet class, to a word: its block areas start 16-aligned and, with
//! `MI_MAX_ALIGN_SIZE` 16, its size classes from 16 octets up are multiples of 16 (`mi_bin`
//! rounds 3, 5 and 7 words up: `MI_ALIGN2W`); `alloc.c` asserts it. So an alignment of at most
//! 16 that the size covers needs plain `mi_malloc`, as std's `System` decides for glibc.

use libmimalloc_sys as mi;
use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

/// The alignment every `mi_malloc` block of at least this size has (`MI_MAX_ALIGN_SIZE`).
const MIN_ALIGN: usize = 16;

/// `#[global_allocator] static GLOBAL: Mimalloc = Mimalloc;` (src/main.rs, the floors in
/// `benches/`).
pub struct Mimalloc;

/// Whether plain `malloc` of `size` octets is aligned enough for `align`.
#[inline]
fn plain(align: usize, size: usize) -> bool {
    align <= MIN_ALIGN && align <= size
}

// SAFETY: each method hands mimalloc's own blocks out and back; an alignment plain `mi_malloc`
// cannot promise goes to its aligned calls, and `mi_free` takes blocks from either.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's allocation calls have no preconditions beyond their arguments.
        unsafe {
            if plain(layout.align(), layout.size()) {
                mi::mi_malloc(layout.size()) as *mut u8
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        unsafe {
            if plain(layout.align(), layout.size()) {
                mi::mi_zalloc(layout.size()) as *mut u8
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (GlobalAlloc's contract).
        unsafe { mi::mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout` (GlobalAlloc's contract); the
        // new block keeps its alignment by the same rule as `alloc`.
        unsafe {
            if plain(layout.align(), new_size) {
                mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
            } else {
                mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aligned(p: *mut u8, align: usize) -> bool {
        !p.is_null() && (p as usize).is_multiple_of(align)
    }

    /// Blocks of every alignment up to a page and of sizes across mimalloc's classes (small,
    /// the 1 KiB fast-path edge, packet sizes, large) come back aligned, writable, and keep
    /// their contents through a realloc that grows and one that shrinks.
    #[test]
    fn blocks_are_aligned_and_keep_their_contents() {
        let a = Mimalloc;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1, 3, 8, 12, 16, 24, 40, 100, 1024, 1025, 1452, 4000, 70_000] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero size; each block is freed with its layout.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(aligned(p, align), "{size} {align}");
                    for i in 0..size {
                        *p.add(i) = i as u8;
                    }
                    let q = a.realloc(p, layout, size * 3);
                    assert!(aligned(q, align), "grown {size} {align}");
                    assert!((0..size).all(|i| *q.add(i) == i as u8), "grown {size} {align}");
                    let grown = Layout::from_size_align(size * 3, align).unwrap();
                    let keep = size.div_ceil(2);
                    let r = a.realloc(q, grown, keep);
                    assert!(aligned(r, align), "shrunk {size} {align}");
                    assert!((0..keep).all(|i| *r.add(i) == i as u8), "shrunk {size} {align}");
                    a.dealloc(r, Layout::from_size_align(keep, align).unwrap());
                    let z = a.alloc_zeroed(layout);
                    assert!(aligned(z, align), "zeroed {size} {align}");
                    assert!((0..size).all(|i| *z.add(i) == 0), "zeroed {size} {align}");
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
