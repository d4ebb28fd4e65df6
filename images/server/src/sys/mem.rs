//! Memory the borrow checker cannot follow: queued output that points into the content table (kept alive by an
//! `Arc<Table>` beside it), the worker's borrow of its own table across a batch, and memchr.

use std::sync::Arc;

/// Bytes owned by something else that the holder keeps alive (table memory referenced by a queued response: the
/// batch holds the worker's `Arc<Table>`, `Pending` holds its own). Plain data, so output segments stay `Copy`.
#[derive(Clone, Copy, Debug)]
pub struct Borrowed {
    ptr: *const u8,
    len: usize,
}

impl Borrowed {
    /// Remembers `b`. The caller keeps its owner alive for as long as this value is used (see the type's docs).
    #[inline]
    pub fn new(b: &[u8]) -> Borrowed {
        Borrowed { ptr: b.as_ptr(), len: b.len() }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes from `n` on (`n` ≤ len).
    #[inline]
    pub fn skip(self, n: usize) -> Borrowed {
        debug_assert!(n <= self.len);
        Borrowed { ptr: self.ptr.wrapping_add(n), len: self.len - n }
    }

    /// The bytes again.
    #[inline]
    pub fn bytes<'a>(&self) -> &'a [u8] {
        // SAFETY: made from a live slice whose owner (the content table) the holder of this value keeps alive
        // through an Arc until the bytes are written (out.rs: the worker's table for a batch, Pending::_hold
        // after); `skip` stays within it.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// A borrow of `arc`'s value that does not hold its owner borrowed, so a worker can answer a batch from its
/// table while mutating itself.
#[inline]
pub fn detach<'a, T>(arc: &Arc<T>) -> &'a T {
    // SAFETY: the worker owns the Arc and replaces it only at the top of its event loop, never while a batch is
    // being answered; output that outlives the batch holds its own Arc (Pending::_hold).
    unsafe { &*Arc::as_ptr(arc) }
}

/// The first index of `byte` in `buf` (libc's memchr: vectorised, faster than a byte loop on long heads).
#[inline]
pub fn memchr(buf: &[u8], byte: u8) -> Option<usize> {
    if buf.is_empty() {
        return None;
    }
    // SAFETY: memchr reads at most buf.len() bytes of a valid slice.
    let p = unsafe { libc::memchr(buf.as_ptr() as *const libc::c_void, byte as i32, buf.len()) };
    if p.is_null() {
        None
    } else {
        Some(p as usize - buf.as_ptr() as usize)
    }
}

/// Gives the allocator's free memory back to the kernel (glibc `malloc_trim(0)`: the top of every arena, and
/// whole free pages inside them with `MADV_DONTNEED`). Without it, memory freed after a burst of connections
/// stays in the process's RSS for good. It walks the allocator's bins, so it is called off the hot path and
/// rarely (server/trim.rs decides when). Returns whether any memory went back; other C libraries: a no-op.
pub fn trim_heap() -> bool {
    #[cfg(target_env = "gnu")]
    {
        // SAFETY: malloc_trim takes a plain size and only touches the allocator's own state, under its locks.
        unsafe { libc::malloc_trim(0) != 0 }
    }
    #[cfg(not(target_env = "gnu"))]
    {
        false
    }
}
