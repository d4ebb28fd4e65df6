//! The content table: every servable file with its encoded variants and precomputed header blocks, looked
//! up by normalised URL path. Built aside by the loader and swapped in whole; never mutated once built.

use std::fs::File;
use std::sync::Arc;

use crate::compress::encoding::{self, Encoding};

pub use crate::fxhash::{FxHasher, FxMap};

/// Bodies are shared (`Arc`) so that adding background encodings builds a new table without copying content,
/// and the encoding store (encodings.rs) and the table hold one copy between them.
#[derive(Clone)]
pub enum Body {
    Mem(Arc<[u8]>),
    /// Over the memory budget or the in-memory size cap: served with sendfile from this open file.
    Disk(Arc<File>),
    /// A pool site's disk-served file (pool/): its path and the metadata its load saw, opened per response and
    /// closed once sent, so that descriptors do not grow with the sites and files a pool serves.
    Path(Arc<DiskPath>),
}

/// Where a disk-served file of a pool site is, and what it was at load: a response opens it beneath the root
/// (beneath.rs, no symlink followed) and serves it only if it is still that file (`open`).
pub struct DiskPath {
    pub root: Arc<std::path::PathBuf>,
    pub rel: Box<std::path::Path>,
    pub len: u64,
    pub mtime: (i64, i64),
    pub ino: u64,
}

impl DiskPath {
    /// From a file the loader opened (and then closes).
    pub fn of(root: Arc<std::path::PathBuf>, rel: &std::path::Path, m: &std::fs::Metadata) -> DiskPath {
        use std::os::unix::fs::MetadataExt;
        DiskPath { root, rel: rel.into(), len: m.len(), mtime: (m.mtime(), m.mtime_nsec()), ino: m.ino() }
    }

    /// Opens the file for one response. None when it cannot be opened or is no longer the file the load saw
    /// (another inode, size or modification time): its precomputed length and ETag would lie, so the caller
    /// answers 503 (`Retry-After: 1`) instead of serving it with a wrong length.
    pub fn open(&self) -> Option<File> {
        use std::os::unix::fs::MetadataExt;
        let (f, m) = crate::site::beneath::open_with_metadata(&self.root, &self.rel).ok()?;
        let same = m.len() == self.len && (m.mtime(), m.mtime_nsec()) == self.mtime && m.ino() == self.ino;
        same.then_some(f)
    }
}

impl Body {
    /// Served from disk (an open file or a path).
    pub fn on_disk(&self) -> bool {
        !matches!(self, Body::Mem(_))
    }
}

#[derive(Clone)]
pub struct Variant {
    pub body: Body,
    pub len: u64,
    /// Quoted strong entity-tag, e.g. `"3f1c...-br"`.
    pub etag: Box<[u8]>,
    /// Representation header fields without Content-Length, each ending in CRLF.
    pub fields: Box<[u8]>,
    /// `HTTP/1.1 200 OK` + Content-Length + `fields`: everything a full response needs but Date/Connection.
    pub head_200: Box<[u8]>,
    /// Fields a 304 carries (ETag, Last-Modified, Cache-Control, Vary, extra headers).
    pub fields_304: Box<[u8]>,
    /// HTTP/2: `head_200` as an HPACK block (`:status`, `content-length`, `fields`), encoded once here.
    pub h2_200: Box<[u8]>,
    /// HTTP/3: the same head as a QPACK section (static table only), encoded by the first worker that serves
    /// this variant over HTTP/3 and kept (http3/respond.rs). Not at load time like `h2_200`: a process without
    /// `--http3` pays only this empty pointer. With `--http3`, charged (site/footprint.rs) as if filled.
    pub h3_200: once_cell::race::OnceBox<Box<[u8]>>,
}

#[derive(Clone)]
pub struct FileEntry {
    /// URL path, e.g. `/css/site.css`.
    pub path: String,
    /// SHA-256 of the identity body: the ETag is its first 10 bytes; background encodings are keyed by it.
    pub digest: [u8; 32],
    /// The Content-Type header value.
    pub mime: Box<str>,
    pub last_modified: i64,
    /// Indexed by `Encoding as usize`; identity is always present. Boxed: most files have no other variant, and
    /// three empty inline slots would cost each of them 336 bytes (issue 38: per-file memory is charged).
    pub variants: [Option<Box<Variant>>; encoding::COUNT],
    /// The headers decided for this file (file_headers.rs), kept to rebuild the blocks when encodings arrive.
    pub headers: Arc<crate::headers::resolved::Resolved>,
}

impl FileEntry {
    pub fn identity(&self) -> &Variant {
        self.variants[0].as_deref().expect("identity variant always exists")
    }
    pub fn has(&self, e: Encoding) -> bool {
        self.variants[e as usize].is_some()
    }
    pub fn variant(&self, e: Encoding) -> &Variant {
        self.variants[e as usize].as_deref().unwrap_or_else(|| self.identity())
    }
    pub fn negotiable(&self) -> bool {
        self.variants[1..].iter().any(Option::is_some)
    }
    /// Which variants exist, by `Encoding as usize` (for `encoding::negotiate`).
    #[inline]
    pub fn available(&self) -> [bool; encoding::COUNT] {
        std::array::from_fn(|i| self.variants[i].is_some())
    }
}

/// What a path serves (defined with the path map, site/paths.rs).
pub use crate::site::paths::Target;

/// `repr(C)` and cache-line aligned, its fields in the order a request reads them: the map, the entries and the
/// SPA index in the first line, the limits, access, skew, redirect and SPA flags and the forced rules' emptiness
/// (rules::Site keeps `forced` first) in the second. In a pool most tables are cold in the CPU's caches, and left to
/// the compiler these fields spread over five of the table's six lines (docs/bench/pools-route-2026-12-04.md).
#[derive(Default, Clone)]
#[repr(C, align(64))]
pub struct Table {
    /// Path → target (paths.rs; its buckets shared for the same reason as `entries`: the encoder's copies of the
    /// table keep the paths they had).
    pub map: crate::site::paths::PathMap,
    /// Each entry behind its own `Arc`: the background encoder publishes a copy of the table with a few entries
    /// replaced, and a copy must not duplicate every file's header blocks (issue 38: 33,000 files are ~100 MB of
    /// blocks). Entries are never mutated once built; the hot path reads them through one more pointer.
    pub entries: Vec<Arc<FileEntry>>,
    /// `/index.html`, for the SPA fallback.
    pub spa_index: Option<u32>,
    /// The site value's `limits.perClient` (fairshare/): checked before a request is answered (answer/limit.rs).
    pub per_client: Option<crate::fairshare::Rate>,
    /// The site value's `access` (guard/): checked in the core before a path is looked up (answer/request.rs),
    /// and its trusted proxies by the protocols when they name the client (guard/forwarded.rs).
    pub access: Option<Arc<crate::guard::Access>>,
    /// The previous deploys a request this table has no file for may be answered from (skew protection: skew/,
    /// answer/stale.rs); None when the site value's `skewProtection` is off or the content is not from Git.
    pub skew: Option<Arc<crate::skew::Previous>>,
    /// The site value's `httpsRedirect`, `spaFallback` and `hsts` (below): read by the workers from the table
    /// they serve, so a reloaded value applies with its table (site_value/).
    pub https_redirect: Option<u16>,
    pub spa_fallback: bool,
    /// Redirects, rewrites, clean-URL redirects and error pages (rules/).
    pub rules: crate::rules::Site,
    /// The custom 404 page.
    pub not_found: Option<u32>,
    pub hsts: Option<Box<str>>,
    /// `--cors` rules, indexed by `Resolved::cors`.
    pub cors: Arc<[crate::headers::cors::CorsRule]>,
    /// The site value's `limits.perClientHandshakes` (fairshare/handshake.rs): checked when a TLS connection is
    /// accepted, before its handshake begins (server/accept.rs).
    pub per_client_handshakes: Option<crate::fairshare::Rate>,
    /// Sum of identity sizes.
    pub bytes: u64,
    /// Bytes of content held in memory, all variants.
    pub memory_bytes: u64,
    /// What the table itself costs besides content (entries, header blocks, names, the path map, open files of
    /// disk-served bodies), as charged against the memory budget (site/footprint.rs).
    pub table_bytes: u64,
    /// Memory limit, budget, bytes served from disk, fit limit (memory.rs).
    pub memory: crate::site::memory::Summary,
}

impl Table {
    #[inline]
    pub fn lookup(&self, path: &[u8]) -> Option<Target> {
        self.map.get(path)
    }
    pub fn entry(&self, i: u32) -> &FileEntry {
        &self.entries[i as usize]
    }
    pub fn files(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{Hash, Hasher};

    #[test]
    fn fx_hash_distinguishes_paths() {
        let h = |s: &[u8]| {
            let mut f = FxHasher::default();
            s.hash(&mut f);
            f.finish()
        };
        assert_ne!(h(b"/a.html"), h(b"/b.html"));
        assert_ne!(h(b"/index.html"), h(b"/index.htm"));
        let mut m: FxMap<Box<[u8]>, Target> = FxMap::default();
        m.insert(Box::from(&b"/x"[..]), Target::Redirect);
        assert_eq!(m.get(&b"/x"[..]).copied(), Some(Target::Redirect));
    }

    /// The HTTP/3 head's cell is one pointer: a variant stays in malloc's 128-byte chunk, as before it had one
    /// (std's `OnceLock<Box<[u8]>>`, 24 bytes, took it to 144, and the h2 8 KiB row lost 6 %:
    /// docs/bench/h3-head-2026-12-05.md).
    #[test]
    fn a_variant_stays_in_its_128_byte_chunk() {
        assert_eq!(size_of::<once_cell::race::OnceBox<Box<[u8]>>>(), 8);
        assert!(crate::site::footprint::chunk(size_of::<Variant>()) <= 128, "{} bytes", size_of::<Variant>());
    }

    #[test]
    fn what_a_request_reads_is_in_the_tables_first_two_cache_lines() {
        use std::mem::{offset_of, size_of};
        let end = |offset: usize, size: usize| offset + size;
        assert_eq!(std::mem::align_of::<Table>(), 64);
        let line0 = [
            end(offset_of!(Table, map), size_of::<crate::site::paths::PathMap>()),
            end(offset_of!(Table, entries), size_of::<Vec<Arc<FileEntry>>>()),
            end(offset_of!(Table, spa_index), size_of::<Option<u32>>()),
        ];
        assert!(line0.iter().all(|&e| e <= 64), "{line0:?}");
        let line1 = [
            end(offset_of!(Table, per_client), size_of::<Option<crate::fairshare::Rate>>()),
            end(offset_of!(Table, access), 8),
            end(offset_of!(Table, skew), 8),
            end(offset_of!(Table, https_redirect), size_of::<Option<u16>>()),
            end(offset_of!(Table, spa_fallback), 1),
            end(offset_of!(Table, rules) + crate::rules::Site::FORCED_OFFSET, crate::rules::Site::FORCED_SIZE),
        ];
        assert!(line1.iter().all(|&e| e <= 128), "{line1:?}");
    }
}
