//! The store of background encodings, keyed by the SHA-256 of the file's content (not its path): a reload
//! that changes three files re-encodes three files, and a renamed file keeps its variants. With
//! `--compress-cache DIR` the store also lives on disk (`<hex digest>.br`, `.gz`, `.zst`; an empty file means
//! "not smaller than the original"), so a restarted pod reads its variants instead of recomputing them. An entry
//! counts only when all three files are there: a cache written before zstd existed is recomputed once.
//!
//! The store and the tables share bodies (`Arc`): an encoding held by both costs its bytes once.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::compress::codec;
use crate::compress::encoding::{self, Encoding, COMPRESSED};
use crate::log::{self, V};
use crate::site::content::{Body, FileEntry, Table};
use crate::site::entry::{build_entry, Loaded};
use crate::site::{footprint, mime};

pub type Digest = [u8; 32];

/// The variants of one content; `None` where the encoding was not smaller.
#[derive(Default, Debug, PartialEq)]
pub struct Encoded {
    pub br: Option<Arc<[u8]>>,
    pub gz: Option<Arc<[u8]>>,
    pub zst: Option<Arc<[u8]>>,
}

impl Encoded {
    pub fn compute(data: &[u8]) -> Encoded {
        Encoded::from(codec::all(data))
    }

    /// The body of encoding `e` (None for identity and for encodings that were not smaller).
    pub fn get(&self, e: Encoding) -> Option<&Arc<[u8]>> {
        match e {
            Encoding::Identity => None,
            Encoding::Br => self.br.as_ref(),
            Encoding::Gzip => self.gz.as_ref(),
            Encoding::Zstd => self.zst.as_ref(),
        }
    }

    pub fn bytes(&self) -> u64 {
        COMPRESSED.iter().filter_map(|&e| self.get(e)).map(|b| b.len() as u64).sum()
    }
}

impl From<codec::All> for Encoded {
    fn from(a: codec::All) -> Encoded {
        Encoded { br: a.br.map(Arc::from), gz: a.gz.map(Arc::from), zst: a.zst.map(Arc::from) }
    }
}

pub struct Store {
    map: Mutex<HashMap<Digest, Arc<Encoded>>>,
    /// None: no `--compress-cache`, or it turned out unusable (logged once).
    dir: Mutex<Option<PathBuf>>,
}

fn hex(d: &Digest) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_hex(s: &str) -> Option<Digest> {
    if s.len() != 64 {
        return None;
    }
    let mut d = [0u8; 32];
    for (i, b) in d.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(d)
}

const EXTS: [&str; 3] = ["br", "gz", "zst"];

impl Store {
    /// `dir` is created if missing; an unwritable one is logged and not used (the store then lives in memory only).
    pub fn new(dir: Option<&Path>) -> Store {
        let dir = dir.and_then(|d| match usable(d) {
            Ok(()) => Some(d.to_path_buf()),
            Err(e) => {
                log::warn(
                    "--compress-cache is not usable; encodings are kept in memory only",
                    &[("dir", V::S(&d.display().to_string())), ("error", V::S(&e))],
                );
                None
            }
        });
        Store { map: Mutex::new(HashMap::new()), dir: Mutex::new(dir) }
    }

    pub fn get(&self, d: &Digest) -> Option<Arc<Encoded>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).get(d).cloned()
    }

    pub fn contains(&self, d: &Digest) -> bool {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).contains_key(d)
    }

    pub fn insert(&self, d: Digest, e: Encoded) {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).insert(d, Arc::new(e));
    }

    fn dir(&self) -> Option<PathBuf> {
        self.dir.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The encodings of `d` from the cache directory, when all three are there.
    pub fn read_disk(&self, d: &Digest) -> Option<Encoded> {
        let dir = self.dir()?;
        let name = hex(d);
        let read = |ext: &str| -> Option<Option<Arc<[u8]>>> {
            let b = fs::read(dir.join(format!("{name}.{ext}"))).ok()?;
            Some(if b.is_empty() { None } else { Some(Arc::from(b)) })
        };
        Some(Encoded { br: read("br")?, gz: read("gz")?, zst: read("zst")? })
    }

    /// Writes `e` to the cache directory (each file whole or not at all: written aside, then renamed). A
    /// failure (full disk, read-only volume) turns the directory off for the rest of the process.
    pub fn write_disk(&self, d: &Digest, e: &Encoded) {
        let Some(dir) = self.dir() else { return };
        let name = hex(d);
        for (ext, body) in EXTS.iter().zip([&e.br, &e.gz, &e.zst]) {
            let path = dir.join(format!("{name}.{ext}"));
            let tmp = dir.join(format!("{name}.{ext}.tmp"));
            let r = fs::write(&tmp, body.as_deref().unwrap_or(&[])).and_then(|()| fs::rename(&tmp, &path));
            if let Err(err) = r {
                let _ = fs::remove_file(&tmp);
                log::warn(
                    "cannot write to --compress-cache; encodings are kept in memory only from now on",
                    &[("dir", V::S(&dir.display().to_string())), ("error", V::S(&err.to_string()))],
                );
                *self.dir.lock().unwrap_or_else(|e| e.into_inner()) = None;
                return;
            }
        }
    }

    /// Forgets every encoding whose content is not in `keep`, in memory and on disk: the store never holds
    /// more than the current site's variants.
    pub fn retain(&self, keep: &HashSet<Digest>) {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).retain(|d, _| keep.contains(d));
        let Some(dir) = self.dir() else { return };
        let Ok(rd) = fs::read_dir(&dir) else { return };
        for ent in rd.flatten() {
            let name = ent.file_name();
            let Some(name) = name.to_str() else { continue };
            let ours = match name.rsplit_once('.') {
                Some((stem, "tmp")) => stem.rsplit_once('.').and_then(|(h, _)| parse_hex(h)).map(|_| false),
                Some((h, ext)) if EXTS.contains(&ext) => parse_hex(h).map(|d| keep.contains(&d)),
                _ => None,
            };
            // Only files named like ours are touched: the directory may be shared with something else.
            if ours == Some(false) {
                let _ = fs::remove_file(ent.path());
            }
        }
    }
}

fn usable(d: &Path) -> Result<(), String> {
    fs::create_dir_all(d).map_err(|e| e.to_string())?;
    let probe = d.join(".hyperstatic-probe");
    fs::write(&probe, b"").map_err(|e| e.to_string())?;
    match fs::remove_file(&probe) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// Whether the background encoder works on this file: held in memory, of a compressible type, big enough, and
/// without variants of its own (siblings on disk, or encodings already attached).
pub fn wants_encoding(e: &FileEntry) -> bool {
    matches!(e.identity().body, Body::Mem(_))
        && !e.negotiable()
        && !codec::is_sibling(&e.path)
        && codec::worth(mime::for_name(&e.path).compressible, e.identity().len)
}

/// How many files of `t` still wait for the encoder.
pub fn pending(t: &Table, store: &Store) -> usize {
    t.entries.iter().filter(|e| wants_encoding(e) && !store.contains(&e.digest)).count()
}

/// Gives every file of `t` that wants encodings the ones the store holds, as long as the memory budget has room
/// (`t.memory.budget` less what `t` already holds, content and table). Each costs its bytes (content) and what its
/// entry grows by: three more variants' header blocks, the identity's rebuilt with `Vary` (footprint.rs), and its
/// place in the store. Returns how many files gained variants.
pub fn attach(t: &mut Table, store: &Store) -> usize {
    let mut left = t.memory.budget.map_or(u64::MAX, |b| b.saturating_sub(t.memory_bytes + t.table_bytes));
    let mut attached = 0;
    for i in 0..t.entries.len() {
        let e = &t.entries[i];
        if !wants_encoding(e) {
            continue;
        }
        let Some(enc) = store.get(&e.digest) else { continue };
        let n = enc.bytes();
        if n == 0 || n > left {
            continue;
        }
        let with = with_encodings(e, &enc);
        let grows = footprint::entry(&with).saturating_sub(footprint::entry(e)) + STORE_ENTRY;
        if n + grows > left {
            continue;
        }
        left -= n + grows;
        t.entries[i] = Arc::new(with);
        t.memory_bytes += n;
        t.table_bytes += grows;
        t.memory.table_bytes = t.table_bytes;
        attached += 1;
    }
    attached
}

/// What one content's place in the store costs besides its bytes: the map's slot (digest and `Arc`), the
/// `Arc<Encoded>` allocation, and the three bodies' `Arc` headers (footprint.rs).
pub const STORE_ENTRY: u64 = footprint::map_slot(std::mem::size_of::<(Digest, Arc<Encoded>)>())
    + footprint::chunk(2 * std::mem::size_of::<usize>() + std::mem::size_of::<Encoded>())
    + 3 * footprint::MEM_BODY;

/// Encodes, now and on the calling thread, every file of `t` the store lacks: for tests and tools that want a
/// table with all its variants (the server itself leaves this to the background encoder).
pub fn encode_now(t: &Table, store: &Store) {
    for e in t.entries.iter().filter(|e| wants_encoding(e) && !store.contains(&e.digest)) {
        if let Body::Mem(data) = &e.identity().body {
            store.insert(e.digest, Encoded::compute(data));
        }
    }
}

/// The digests of every file of `t`.
pub fn digests(t: &Table) -> HashSet<Digest> {
    t.entries.iter().map(|e| e.digest).collect()
}

/// `e` with `enc`'s variants added (its identity gains `Vary: Accept-Encoding`, so every header block is rebuilt);
/// the bodies are shared, not copied.
pub(crate) fn with_encodings(e: &FileEntry, enc: &Encoded) -> FileEntry {
    let v = |x: Encoding| e.variants[x as usize].as_ref().map(|v| (v.body.clone(), v.len));
    let from = |b: Option<&Arc<[u8]>>| b.map(|b| (Body::Mem(b.clone()), b.len() as u64));
    let l = Loaded {
        url: e.path.clone(),
        content_type: mime::ContentType { value: e.mime.to_string(), compressible: true },
        mtime: e.last_modified,
        digest: e.digest,
        identity: (e.identity().body.clone(), e.identity().len),
        encoded: std::array::from_fn(|i| match encoding::ALL[i] {
            Encoding::Identity => None,
            x => v(x).or_else(|| from(enc.get(x))),
        }),
    };
    build_entry(e.headers.clone(), l)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("hs-encodings-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn hex_round_trips() {
        let d: Digest = std::array::from_fn(|i| (i * 7) as u8);
        assert_eq!(parse_hex(&hex(&d)), Some(d));
        assert_eq!(parse_hex("xyz"), None);
    }

    #[test]
    fn disk_cache_round_trips_and_keeps_not_smaller() {
        let dir = tmp("disk");
        let s = Store::new(Some(&dir));
        let d = [1u8; 32];
        let e = Encoded { br: Some(Arc::from(&b"br-bytes"[..])), gz: None, zst: Some(Arc::from(&b"zst"[..])) };
        assert_eq!(s.read_disk(&d), None);
        s.write_disk(&d, &e);
        assert_eq!(s.read_disk(&d), Some(e), "gz 'not smaller' survives as an empty file");
        // A cache from before zstd (no .zst file) is no entry: it is recomputed rather than served without zstd.
        fs::remove_file(dir.join(format!("{}.zst", hex(&d)))).unwrap();
        assert_eq!(s.read_disk(&d), None);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn retain_forgets_other_content_and_leaves_foreign_files() {
        let dir = tmp("retain");
        let s = Store::new(Some(&dir));
        let (keep, drop) = ([2u8; 32], [3u8; 32]);
        for d in [keep, drop] {
            s.insert(d, Encoded::default());
            s.write_disk(&d, &Encoded::default());
        }
        fs::write(dir.join("notes.txt"), "not ours").unwrap();
        fs::write(dir.join(format!("{}.br.tmp", hex(&keep))), "half written").unwrap();
        s.retain(&HashSet::from([keep]));
        assert!(s.contains(&keep) && !s.contains(&drop));
        assert!(s.read_disk(&keep).is_some() && s.read_disk(&drop).is_none());
        assert!(dir.join("notes.txt").exists());
        assert!(!dir.join(format!("{}.br.tmp", hex(&keep))).exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unusable_cache_dir_leaves_a_memory_store() {
        let s = Store::new(Some(Path::new("/proc/hyperstatic-cache")));
        s.write_disk(&[4u8; 32], &Encoded::default());
        assert_eq!(s.read_disk(&[4u8; 32]), None);
    }
}
