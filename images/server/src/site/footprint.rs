//! What the content table costs in memory besides the content bytes, computed from the real structures: the
//! memory budget (memory.rs) charges it before any content byte is allotted.
//!
//! Every figure is a heap allocation's real size as glibc's malloc hands it out (`chunk`: the request plus an
//! 8-byte header, rounded up to 16 bytes, at least 32) summed over the fields the structure actually holds, or a
//! `size_of` of the structure itself; nothing is a guess per file. Two costs are not the process's own heap and
//! are measured instead: the kernel memory of a file kept open for sendfile (`OPEN_FILE`) and the slots of the hash
//! maps (`map_slot`, hashbrown's layout at its worst load). `tests/footprint.rs` holds the sums against a counting
//! allocator (live bytes after a load, peak bytes during one) so a field added to an entry cannot go uncharged.

use std::mem::size_of;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::headers::resolved::Resolved;
use crate::site::content::{Body, FileEntry, Variant};

/// glibc malloc's chunk for a request of `n` bytes (8 bytes of size header, 16-byte alignment, 32 at least); 0 for
/// no allocation (an empty `Box<[u8]>`, `String::new()`).
pub const fn chunk(n: usize) -> u64 {
    if n == 0 {
        return 0;
    }
    let c = (n + 8 + 15) & !15;
    (if c < 32 { 32 } else { c }) as u64
}

/// Kernel memory of one file kept open (a disk-served body and each of its siblings): the `struct file` (192
/// bytes in this kernel's `filp` slab) and its descriptor slot, measured at 209 bytes of kmem a file over 15,000
/// opens in a cgroup v1 group; plus the dentry (192) and ext4 inode (1,128) the open pins, which are charged to
/// whichever process looked the name up first (the server's own walk, when nothing else did): 1.5 KiB a file.
pub const OPEN_FILE: u64 = 1536;

/// A hash map's cost per entry of `slot` bytes: hashbrown keeps one control byte per bucket, grows at 7/8 full to
/// twice the buckets, so right after growing an entry has 16/7 buckets.
pub const fn map_slot(slot: usize) -> u64 {
    ((slot + 1) * 16).div_ceil(7) as u64
}

/// One path in the table's map (site/paths.rs, a `LineMap`): its share of the buckets when it fits in one, else a
/// plain map's slot and its copy of the key.
pub fn path_key(len: usize) -> u64 {
    if len <= crate::linemap::INLINE {
        crate::linemap::COST_PER_KEY
    } else {
        map_slot(size_of::<(Box<[u8]>, u32)>()) + chunk(len)
    }
}

/// The header blocks of one variant (its body is content, charged apart).
/// Whether this process serves HTTP/3: then any variant's `h3_200` may be filled (by its first HTTP/3 answer),
/// and every variant is charged as if it were. A process setting, not a site's: set once at start (lib.rs),
/// before the first load, and never cleared. Without `--http3` nothing is charged for the sections, which are
/// then never made.
static HTTP3_HEADS: AtomicBool = AtomicBool::new(false);

/// Charges every variant loaded from now on its HTTP/3 head (lib.rs, when `--http3` is on).
pub fn charge_http3_heads() {
    HTTP3_HEADS.store(true, Ordering::Relaxed);
}

/// The header blocks of one variant (its body is content, charged apart).
pub fn variant_blocks(v: &Variant) -> u64 {
    variant_blocks_with(v, HTTP3_HEADS.load(Ordering::Relaxed))
}

/// `variant_blocks`, with `h3_200` charged as filled when `http3`, by its bound (http3/respond.rs
/// `variant_section`): the HPACK block and a byte per field line (`:status` and `content-length` too).
pub fn variant_blocks_with(v: &Variant, http3: bool) -> u64 {
    let h3_200 = if http3 { v.h2_200.len() + v.fields.iter().filter(|&&b| b == b'\n').count() + 2 } else { 0 };
    [v.etag.len(), v.fields.len(), v.head_200.len(), v.fields_304.len(), v.h2_200.len(), h3_200]
        .into_iter()
        .map(chunk)
        .sum()
}

/// A memory body's handle besides its bytes (which are content): the `Arc<[u8]>` counters and malloc's header and
/// rounding, at most 16 + 8 + 15 bytes.
pub const MEM_BODY: u64 = 40;
/// A disk body's handle: its `Arc<File>` allocation and the open file's kernel memory.
pub const DISK_BODY: u64 = chunk(2 * size_of::<usize>() + size_of::<std::fs::File>()) + OPEN_FILE;

/// A pool's disk body (`Body::Path`): its `Arc<DiskPath>` allocation and its relative path (the root is shared);
/// no descriptor is held.
pub fn path_body(p: &crate::site::content::DiskPath) -> u64 {
    path_body_of(p.rel.as_os_str().len())
}

/// `path_body` for a relative path of `rel_len` bytes (the load's plan, before the body exists).
pub const fn path_body_of(rel_len: usize) -> u64 {
    chunk(2 * size_of::<usize>() + size_of::<crate::site::content::DiskPath>()) + chunk(rel_len)
}

/// The handle of a body (`MEM_BODY`, `DISK_BODY` or `path_body`).
pub fn body_handle(b: &Body) -> u64 {
    match b {
        Body::Mem(_) => MEM_BODY,
        Body::Disk(_) => DISK_BODY,
        Body::Path(p) => path_body(p),
    }
}

/// One entry as the table holds it, content bytes aside: the `Arc<FileEntry>` allocation, the table's pointer to
/// it (twice: a `Vec` grows by doubling), its path and MIME, every variant's box, header blocks and body handle,
/// and its path in the map. The `Resolved` headers are shared between entries (charged once each, `resolved`).
pub fn entry(e: &FileEntry) -> u64 {
    let fixed = chunk(2 * size_of::<usize>() + size_of::<FileEntry>()) + 2 * size_of::<Arc<FileEntry>>() as u64;
    let names = chunk(e.path.capacity()) + chunk(e.mime.len()) + path_key(e.path.len());
    let boxed = chunk(size_of::<Variant>());
    let variants: u64 = e.variants.iter().flatten().map(|v| boxed + variant_blocks(v) + body_handle(&v.body)).sum();
    fixed + names + variants
}

/// One distinct set of resolved headers (several entries share it).
pub fn resolved(r: &Resolved) -> u64 {
    let extra: u64 = r.extra.iter().map(|(n, v)| chunk(n.capacity()) + chunk(v.capacity())).sum();
    chunk(2 * size_of::<usize>() + size_of::<Resolved>())
        + chunk(r.cache_control.capacity())
        + r.content_type.as_ref().map_or(0, |c| chunk(c.capacity()))
        + chunk(r.extra.capacity() * size_of::<(String, String)>())
        + extra
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_chunks() {
        assert_eq!(chunk(0), 0);
        assert_eq!(chunk(1), 32);
        assert_eq!(chunk(24), 32);
        assert_eq!(chunk(25), 48);
        assert_eq!(chunk(100), 112);
        assert_eq!(map_slot(24), 58);
    }

    /// With HTTP/3 a variant is charged its QPACK head by the bound, and that bound holds for what the first
    /// HTTP/3 answer actually keeps; without, nothing.
    #[test]
    fn the_http3_head_is_charged_only_with_http3_and_covers_the_real_one() {
        let fields =
            "Content-Type: text/html; charset=utf-8\r\nETag: \"0123456789abcdef0123\"\r\nX-Long-Custom-Name: v\r\n";
        let v = Variant {
            body: Body::Mem(Arc::from(vec![0u8; 10])),
            len: 10,
            etag: Box::from(&b"\"0123456789abcdef0123\""[..]),
            fields: fields.as_bytes().into(),
            head_200: Box::default(),
            fields_304: Box::default(),
            h2_200: crate::http2::respond::variant_block(10, fields.as_bytes()),
            h3_200: Default::default(),
        };
        let real = crate::http3::respond::variant_section(v.len, &v.fields).len();
        let extra = variant_blocks_with(&v, true) - variant_blocks_with(&v, false);
        assert!(extra >= chunk(real), "charged {extra} for a {real}-byte section");
        assert!(extra <= chunk(v.h2_200.len() + 5), "no more than the bound's chunk");
    }
}
