//! Loads a site root into a content Table: walks the tree (following symlinks that stay inside the root),
//! reads files, picks up sibling `.br`/`.gz`/`.zst` variants, hashes ETags and precomputes header blocks. It never
//! compresses: a site is served as soon as it is read, and the background encoder (encoder.rs) adds variants
//! afterwards; the loader only attaches those the encoding store already holds, so a reload keeps the variants
//! of unchanged files. Used at start, on reload, and by `--check`.
//!
//! A table is built from two inputs: the content (the tree under `Settings::root`) and the site value
//! (site_value/), whose rules and headers are compiled into it here. The process settings it needs come as
//! `Settings`, never as the whole `Config`.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use sha2::{Digest as _, Sha256};

use crate::compress::encoding::{self, Encoding, COMPRESSED};
/// Kept here for the background encoder (compress/encoder.rs), which rebuilds an entry with its new variants.
pub(crate) use crate::compress::encodings::with_encodings;
use crate::compress::encodings::{self, Digest, Store};
use crate::headers::per_file;
use crate::headers::resolved::Resolved;
use crate::site::content::{Body, DiskPath, FileEntry, FxMap, Table, Target};
use crate::site::entry::{build_entry, Loaded};
use crate::site::footprint;
use crate::site::memory;
use crate::site::mime;
use crate::site::paths::PathMap;
use crate::site_value::SiteValue;

/// What a load needs of the process settings (`Config::load_settings` builds it).
#[derive(Debug, Clone)]
pub struct Settings {
    pub root: std::path::PathBuf,
    /// `--max-entries`, `--max-depth`.
    pub caps: Caps,
    pub max_memory_file_size: u64,
    /// The memory limit and content budget (memory.rs).
    pub budget: memory::Budget,
    /// `--compress`: attach the encoder's variants.
    pub compress: bool,
    /// A disk-served file's ETag digest from its metadata (path, size, modification time, inode) instead of its
    /// bytes: a load that opens and stats each file but reads none (a pool site's first, fast load, pool/;
    /// the full load that follows gives content ETags).
    pub etag_from_metadata: bool,
    /// Disk-served files kept as a path and their metadata (`Body::Path`), opened per response, instead of an
    /// open descriptor each: a pool's sites (pool/), whose files would otherwise need a descriptor apiece.
    pub disk_by_path: bool,
    /// Every body on disk and no memory plan: the table's cost is measured on the table built instead of on a
    /// probe entry per file built beforehand (a pool's quick load, pool/registry.rs: the probe was a second build
    /// of every entry's header blocks, 8 % of the pool thread's first pass). The report then has no fit limit
    /// and never says the table is over budget: the caller charges what the table costs.
    pub all_on_disk: bool,
}

impl Settings {
    /// The flags' defaults for `root` (tests, tools).
    pub fn for_root(root: &Path) -> Settings {
        Settings {
            root: root.to_path_buf(),
            caps: DEFAULT_CAPS,
            max_memory_file_size: 8 << 20,
            budget: memory::Budget::of(None, None),
            compress: true,
            etag_from_metadata: false,
            disk_by_path: false,
            all_on_disk: false,
        }
    }
}

pub use super::report::Report;

pub(crate) use super::walk::{walk, Caps, Found, DEFAULT_CAPS};

/// Trees with fewer files than this are loaded without helper threads.
const INLINE_FILES: usize = 128;

fn digest_file(f: &mut File) -> std::io::Result<Digest> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().into())
}

/// `in_memory`: the memory plan's decision (memory.rs). `siblings`: every walked file by URL (a file's `.br`,
/// `.gz`, `.zst` siblings are looked up there and opened as the walk checked them, like the file itself).
/// The digest of a file's metadata (`Settings::etag_from_metadata`): a new tree's files are new inodes, so a
/// flipped tree never shares an ETag with the one before even where size and time agree.
fn metadata_digest(url: &str, m: &std::fs::Metadata) -> Digest {
    use std::os::unix::fs::MetadataExt;
    let mut h = Sha256::new();
    for n in [m.len(), m.mtime() as u64, m.mtime_nsec() as u64, m.ino(), m.dev()] {
        h.update(n.to_le_bytes());
    }
    h.update(url.as_bytes());
    h.finalize().into()
}

fn load_one(f: &Found, siblings: &HashMap<&str, &Found>, in_memory: bool, cfg: &Settings) -> Result<Loaded, String> {
    let meta_etag = cfg.etag_from_metadata;
    // A disk body: the file kept open, or (`disk_by_path`) its path and metadata, the file closed on return.
    let disk = |found: &Found, file: File, m: &std::fs::Metadata| {
        if cfg.disk_by_path {
            Body::Path(Arc::new(DiskPath::of(found.root.clone(), &found.rel, m)))
        } else {
            Body::Disk(Arc::new(file))
        }
    };
    let content_type = mime::for_name(&f.url);
    // `url.ext` looked up in one buffer (a pool's first load of a site does it for every file, three times).
    let mut key = String::with_capacity(f.url.len() + 5);
    let mut sibling = |enc: Encoding| {
        key.clear();
        key.extend([f.url.as_str(), ".", enc.ext()]);
        siblings.get(key.as_str()).copied()
    };
    let mut encoded: [Option<(Body, u64)>; encoding::COUNT] = Default::default();
    let identity: (Digest, (Body, u64)) = if !in_memory && meta_etag && cfg.disk_by_path {
        // A pool's quick load: the file and its siblings by path with the walk's metadata, none opened here.
        // Each response opens the file beneath the root and serves it only if it is still what this metadata
        // says (DiskPath::open), so opening every file now as well only made the first load of a site slower.
        let by_path = |s: &Found| (Body::Path(Arc::new(DiskPath::of(s.root.clone(), &s.rel, &s.meta))), s.meta.len());
        for enc in COMPRESSED {
            if let Some(s) = sibling(enc) {
                encoded[enc as usize] = Some(by_path(s));
            }
        }
        (metadata_digest(&f.url, &f.meta), by_path(f))
    } else if !in_memory {
        // memory: served from disk, hashed streaming; its siblings are served from disk too.
        let mut file = f.open()?;
        let meta = file.metadata().map_err(|e| format!("{}: {e}", f.fs_path.display()))?;
        let len = meta.len();
        let digest = if meta_etag {
            metadata_digest(&f.url, &meta)
        } else {
            digest_file(&mut file).map_err(|e| format!("{}: {e}", f.fs_path.display()))?
        };
        for enc in COMPRESSED {
            if let Some(s) = sibling(enc) {
                let sfile = s.open()?;
                let sm = sfile.metadata().map_err(|e| format!("{}: {e}", s.fs_path.display()))?;
                encoded[enc as usize] = Some((disk(s, sfile, &sm), sm.len()));
            }
        }
        (digest, (disk(f, file, &meta), len))
    } else {
        let data = f.read()?;
        let digest: Digest = Sha256::digest(&data).into();
        for enc in COMPRESSED {
            if let Some(s) = sibling(enc) {
                let sdata = s.read()?;
                let n = sdata.len() as u64;
                encoded[enc as usize] = Some((Body::Mem(Arc::from(sdata)), n));
            }
        }
        let n = data.len() as u64;
        (digest, (Body::Mem(Arc::from(data)), n))
    };
    let (digest, identity) = identity;
    Ok(Loaded { url: f.url.clone(), content_type, mtime: f.mtime, digest, identity, encoded })
}

/// Loads the site. Files that cannot be read are left out and listed in the report; an unreadable root is
/// an error (a reload then keeps the old table). With a `store`, files get the encodings it already holds.
pub fn load(
    cfg: &Settings,
    site: &SiteValue,
    store: Option<&Store>,
    on_dir: &mut dyn FnMut(&Path),
) -> Result<(Table, Report), String> {
    let mut report = Report::default();
    let (mut found, dirs) = walk(&cfg.root, cfg.caps, on_dir, &mut report)?;
    let site_headers = per_file::take_site_file(&mut found)?;
    // `_redirects` is configuration (rules/), never served.
    // Read through the checked path like every site file (beneath.rs): its lines can end up in /load-error.
    let redirects_text = match found.iter().position(|f| f.url == crate::rules::REDIRECTS_FILE) {
        Some(i) => {
            let f = found.remove(i);
            Some(String::from_utf8(f.read()?).map_err(|_| format!("{}: not UTF-8", f.fs_path.display()))?)
        }
        None => None,
    };
    let urls: HashSet<&str> = found.iter().map(|f| f.url.as_str()).collect();
    let by_url: HashMap<&str, &Found> = found.iter().map(|f| (f.url.as_str(), f)).collect();
    // Each file's headers, equal sets shared (footprint.rs charges each distinct set once).
    let (hdrs, hdrs_bytes) = resolve_all(site, &site_headers, &found);
    // memory: which files are held in memory (the rest, with their siblings, are served from disk). The table's
    // own cost (every entry, whatever its body) is charged first.
    let budget = cfg.budget;
    let mut plan = if cfg.all_on_disk {
        // The load's records as the plan would charge them (an upper bound here: there is no planner's list).
        report.load_bytes = found.iter().map(load_record).sum();
        memory::Plan { in_memory: vec![false; found.len()], table_fits: true, ..memory::Plan::default() }
    } else {
        let mut items = plan_items(site.clean_urls, cfg.disk_by_path, &found, &hdrs);
        items.push(memory::Item { table: hdrs_bytes + dirs_cost(&dirs), ..memory::Item::default() });
        let mut plan = memory::plan(&items, cfg.max_memory_file_size, budget.budget);
        plan.in_memory.pop();
        report.load_bytes = items.iter().map(|i| i.load).sum();
        plan
    };
    siblings_follow_their_file(&found, &mut plan.in_memory);
    // A small tree is loaded on the calling thread: starting threads cost more than its files (a pool loads
    // thousands of 20-file sites, each in well under a millisecond). The CPU count is read once: std reads the
    // cgroup's files for it at each call, which cost a pool's quick loads a tenth of their time.
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let threads = if found.len() < INLINE_FILES {
        1
    } else {
        let cpus = *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()).min(8));
        memory::load_threads(cpus, budget.limit)
    };
    let chunk = found.len().div_ceil(threads).max(1);
    // A sibling held in memory is not read on its own: it is given its file's variant (the same bytes) below.
    let via_file: Vec<bool> =
        found.iter().zip(&plan.in_memory).map(|(f, &m)| m && base_of(&f.url, &urls).is_some()).collect();
    // Each thread builds the entries of its files: no file's loaded parts outlive its entry.
    let work = |part: &[Found], mem: &[bool], via: &[bool]| {
        part.iter()
            .zip(mem)
            .zip(via)
            .map(|((f, &m), &v)| {
                (!v).then(|| load_one(f, &by_url, m, cfg).map(|l| Arc::new(build_entry(hdrs[&*f.url].clone(), l))))
            })
            .collect::<Vec<_>>()
    };
    let results: Vec<Option<Result<Arc<FileEntry>, String>>> = if threads == 1 {
        work(&found, &plan.in_memory, &via_file)
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = found
                .chunks(chunk)
                .zip(plan.in_memory.chunks(chunk))
                .zip(via_file.chunks(chunk))
                .map(|((part, mem), via)| {
                    let work = &work;
                    s.spawn(move || work(part, mem, via))
                })
                .collect();
            handles.into_iter().flat_map(|h| h.join().expect("loader thread panicked")).collect()
        })
    };
    let mut entries = Vec::with_capacity(results.len());
    let mut later = Vec::new();
    for (r, f) in results.into_iter().zip(&found) {
        match r {
            None => later.push(f),
            Some(Ok(e)) => entries.push(e),
            Some(Err(e)) => {
                report.errors.push(e);
                report.unreadable += 1;
            }
        }
    }
    // Entries whose identity body is their file's variant: counted once, as the variant.
    let mut shared = HashSet::new();
    let mut siblings = Vec::with_capacity(later.len());
    {
        let index: std::collections::HashMap<&str, usize> =
            entries.iter().enumerate().map(|(i, e)| (e.path.as_str(), i)).collect();
        for f in later {
            let r = match sibling_from_its_file(f, &entries, &index) {
                Some(l) => {
                    shared.insert(entries.len() + siblings.len());
                    Ok(l)
                }
                None => load_one(f, &by_url, true, cfg),
            };
            match r {
                Ok(l) => siblings.push(Arc::new(build_entry(hdrs[&*l.url].clone(), l))),
                Err(e) => {
                    report.errors.push(e);
                    report.unreadable += 1;
                }
            }
        }
    }
    entries.append(&mut siblings);
    if cfg.all_on_disk {
        // The plan's table cost, measured on the entries themselves (their real bodies: paths or open files).
        let clean = |url: &str| if site.clean_urls { clean_urls_cost(url) } else { 0 };
        plan.table_bytes =
            entries.iter().map(|e| footprint::entry(e) + clean(&e.path)).sum::<u64>() + hdrs_bytes + dirs_cost(&dirs);
    }
    let mut t = Table {
        cors: site.cors.clone().into(),
        spa_fallback: site.spa_fallback,
        https_redirect: site.https_redirect,
        hsts: site.hsts.as_deref().map(Into::into),
        per_client: site.per_client,
        per_client_handshakes: site.per_client_handshakes,
        access: site.access.clone(),
        ..Table::default()
    };
    // The paths first in a plain map (a directory's `/d` only where no file is, its `/d/` its index's), borrowing
    // the entries' and directories' names, then the table's own map built from it (paths.rs).
    let slashes: Vec<String> = dirs.iter().map(|d| format!("{d}/")).collect();
    let mut map: FxMap<&[u8], Target> =
        FxMap::with_capacity_and_hasher(entries.len() + 2 * dirs.len(), Default::default());
    for (i, e) in entries.iter().enumerate() {
        report.files += 1;
        report.bytes += e.identity().len;
        if e.identity().body.on_disk() {
            report.memory.disk_bytes += e.identity().len;
        }
        for (k, v) in e.variants.iter().enumerate() {
            let Some(v) = v else { continue };
            match v.body {
                // A sibling's bytes are its file's variant, counted there.
                Body::Mem(_) if k == 0 && shared.contains(&i) => {}
                Body::Mem(_) => report.memory_bytes += v.len,
                Body::Disk(_) | Body::Path(_) => report.disk_files += 1,
            }
        }
        report.compressed_variants += e.variants[1..].iter().flatten().count();
        map.insert(e.path.as_bytes(), Target::File(i as u32));
    }
    for (d, slash) in dirs.iter().zip(&slashes) {
        if !d.is_empty() {
            map.entry(d.as_bytes()).or_insert(Target::Redirect);
        }
        if let Some(&Target::File(i)) = map.get(format!("{slash}index.html").as_bytes()) {
            map.insert(slash.as_bytes(), Target::File(i));
        }
    }
    t.map = PathMap::build(map.iter().map(|(&p, &target)| (p, target)));
    drop(map);
    t.entries = entries;
    t.spa_index = match t.map.get(b"/index.html") {
        Some(Target::File(i)) => Some(i),
        _ => None,
    };
    if let Some(p) = &site.not_found_page {
        match t.map.get(p.as_bytes()) {
            Some(Target::File(i)) => t.not_found = Some(i),
            _ => {
                report.errors.push(format!("--not-found-page {p}: no such file in the site"));
                report.missing_pages.push(format!("notFoundPage: {p} is not a file in the content"));
            }
        }
    }
    let missing = crate::rules::install(
        &mut t,
        &site.redirects,
        &site.error_pages,
        redirects_text.as_deref(),
        &mut report.errors,
    )?;
    for i in missing {
        let e = &site.error_pages[i];
        report.missing_pages.push(format!("errorPages[{i}].path: {} is not a file in the content", e.path));
    }
    if site.clean_urls {
        crate::rules::clean_urls(&mut t);
    }
    t.bytes = report.bytes;
    report.memory = memory::Summary {
        limit: budget.limit,
        budget: budget.budget,
        over_budget_files: plan.over_budget_files,
        over_budget_bytes: plan.over_budget_bytes,
        fit_limit: plan.fit_limit,
        table_bytes: plan.table_bytes,
        table_over_budget: !plan.table_fits,
        ..report.memory
    };
    t.memory = report.memory;
    t.memory_bytes = report.memory_bytes;
    t.table_bytes = plan.table_bytes;
    if let Some(store) = store.filter(|_| cfg.compress) {
        encodings::attach(&mut t, store);
        report.compressed_variants = t.entries.iter().map(|e| e.variants[1..].iter().flatten().count()).sum();
        report.memory_bytes = t.memory_bytes;
        report.memory.table_bytes = t.table_bytes;
    }
    report.pending_encodings =
        if cfg.compress { t.entries.iter().filter(|e| encodings::wants_encoding(e)).count() } else { 0 };
    Ok((t, report))
}

/// The file a sibling (`x.br`, `x.gz`, `x.zst`) is a variant of, when the tree has that file. A sibling stays a URL of its
/// own (a download site may offer `a.tar` and `a.tar.gz`), but its bytes are held once, as its file's variant.
fn base_of<'a>(url: &'a str, urls: &HashSet<&str>) -> Option<&'a str> {
    let base = COMPRESSED.iter().find_map(|e| url.strip_suffix(e.ext())?.strip_suffix('.'))?;
    urls.contains(base).then_some(base)
}

/// Resolves every file's headers (file_headers.rs), sharing one `Arc` between equal sets (a site has a handful:
/// each distinct set is charged once, `footprint::resolved`). Compared with the last 16 distinct sets only, so a
/// site whose `_headers` gives every file its own set costs a linear pass, not a quadratic one.
fn resolve_all<'a>(
    value: &SiteValue,
    site: &crate::headers::site_file::HeadersFile,
    found: &'a [Found],
) -> (HashMap<&'a str, Arc<Resolved>>, u64) {
    let mut distinct: Vec<Arc<Resolved>> = Vec::new();
    let mut bytes = 0;
    let map = found
        .iter()
        .map(|f| {
            let r = per_file::resolve(value, site, &f.url);
            let known = distinct.iter().rev().take(16).find(|d| ***d == r).cloned();
            let shared = known.unwrap_or_else(|| {
                bytes += footprint::resolved(&r);
                let a = Arc::new(r);
                distinct.push(a.clone());
                a
            });
            (f.url.as_str(), shared)
        })
        .collect();
    (map, bytes)
}

/// The digest of `table_cost`'s probe entry. The ETag's hex is Huffman-coded in the HTTP/2 block, 5 or 6 bits a
/// digit by which digit it is: 0xff bytes ("ff…", 6 bits each) make the longest block any real digest can, so the
/// plan is an upper bound. Zeros (5 bits) made the shortest: a real ETag's block could then cross a malloc chunk
/// the plan had not counted (a quick load's measured charge came out 16 bytes over its plan in one CI run).
const PROBE_DIGEST: [u8; 32] = [0xff; 32];

/// memory: what a file's place in the table costs, measured on the real structure: its entry built as the load
/// will build it (its header blocks for its size and sibling variants, an ETag of the real length), with empty
/// bodies; with `--clean-urls`, the extra paths it may get.
fn table_cost(clean_urls: bool, f: &Found, hdrs: &Arc<Resolved>, siblings: [Option<u64>; encoding::COUNT]) -> u64 {
    let empty: Arc<[u8]> = Arc::from(&[][..]);
    let probe = Loaded {
        url: f.url.clone(),
        content_type: mime::for_name(&f.url),
        mtime: f.mtime,
        digest: PROBE_DIGEST,
        identity: (Body::Mem(empty.clone()), f.len),
        encoded: siblings.map(|n| n.map(|n| (Body::Mem(empty.clone()), n))),
    };
    let entry = footprint::entry(&build_entry(hdrs.clone(), probe));
    entry + if clean_urls { clean_urls_cost(&f.url) } else { 0 }
}

/// memory: with `--clean-urls`, what an `.html` file may add (rules/clean.rs): up to two more paths in the map, a
/// redirect target and its Location.
fn clean_urls_cost(url: &str) -> u64 {
    if url.ends_with(".html") {
        2 * footprint::path_key(url.len() + 1) + footprint::chunk(url.len()) + 24
    } else {
        0
    }
}

/// memory: what the load holds for one file while it runs, besides its entry, and frees at its end: the walk's
/// record (`Found`, twice while that Vec grows), the slots of the maps and lists it keeps over all files at once
/// (URLs, by URL, headers, and the planner's sizes and URLs; the plan; the threads' results, twice: each thread's
/// list, then the joined one; the entries' list). tests/footprint.rs holds it against a counting allocator.
fn load_record(f: &Found) -> u64 {
    use std::mem::size_of;
    let c = footprint::chunk;
    let found = 2 * size_of::<Found>() as u64 + c(f.url.capacity()) + c(f.fs_path.capacity()) + c(f.rel.capacity());
    let maps = 2 * footprint::map_slot(size_of::<&str>()) + 3 * footprint::map_slot(2 * size_of::<&str>());
    let lists = (size_of::<memory::Item>() + 2 * size_of::<bool>()) as u64
        + 2 * size_of::<Option<Result<Arc<FileEntry>, String>>>() as u64
        + size_of::<Arc<FileEntry>>() as u64;
    found + maps + lists
}

/// memory: the map paths of a directory (`/d` and `/d/`) and its name in the walk's list.
fn dirs_cost(dirs: &[String]) -> u64 {
    let one = |d: &String| {
        footprint::chunk(d.capacity()) + std::mem::size_of::<String>() as u64 * 2 + 2 * footprint::path_key(d.len() + 1)
    };
    dirs.iter().map(one).sum()
}

/// memory: the planner's view of the walked files: each with the sizes of the sibling variants it will serve and
/// what its table entry costs. A sibling's bytes are in its file's cost; its entry is its own, and so is the second
/// open of its file when it is served from disk (its file's variant and its own URL each hold one).
/// `by_path`: disk bodies are paths (`Settings::disk_by_path`), which cost their path, not an open file.
fn plan_items(
    clean_urls: bool,
    by_path: bool,
    found: &[Found],
    hdrs: &HashMap<&str, Arc<Resolved>>,
) -> Vec<memory::Item> {
    let lens: HashMap<&str, u64> = found.iter().map(|f| (f.url.as_str(), f.len)).collect();
    let urls: HashSet<&str> = lens.keys().copied().collect();
    // The probe entry holds memory bodies; on disk each body is an open file (or a path) instead. A sibling's
    // path is its file's and an extension (`.br`: 3 bytes; `.zst`: 4).
    let open = |f: &Found| match by_path {
        true => footprint::path_body_of(f.rel.as_os_str().len() + 4).saturating_sub(footprint::MEM_BODY),
        false => footprint::DISK_BODY - footprint::MEM_BODY,
    };
    found
        .iter()
        .map(|f| {
            let mut key = String::with_capacity(f.url.len() + 5);
            let siblings: [Option<u64>; encoding::COUNT] = std::array::from_fn(|i| match encoding::ALL[i] {
                Encoding::Identity => None,
                e => {
                    key.clear();
                    key.extend([f.url.as_str(), ".", e.ext()]);
                    lens.get(key.as_str()).copied()
                }
            });
            let load = load_record(f);
            if base_of(&f.url, &urls).is_some() {
                let table = table_cost(clean_urls, f, &hdrs[f.url.as_str()], Default::default());
                return memory::Item { table, load, ..memory::Item::default() };
            }
            let n = siblings.iter().flatten().count() as u64;
            memory::Item {
                identity: f.len,
                variants: siblings.iter().flatten().sum(),
                table: table_cost(clean_urls, f, &hdrs[f.url.as_str()], siblings),
                disk: (1 + 2 * n) * open(f),
                load,
            }
        })
        .collect()
}

/// memory: a sibling is held where its file's variants are (memory or disk), so the two can share one body.
fn siblings_follow_their_file(found: &[Found], in_memory: &mut [bool]) {
    let index: std::collections::HashMap<&str, usize> =
        found.iter().enumerate().map(|(i, f)| (f.url.as_str(), i)).collect();
    let urls: HashSet<&str> = index.keys().copied().collect();
    for (i, f) in found.iter().enumerate() {
        if let Some(base) = base_of(&f.url, &urls) {
            in_memory[i] = in_memory[index[base]];
        }
    }
}

/// A sibling held in memory, built on the bytes its file already holds as a variant; None when the file did not
/// load with that variant in memory (the sibling is then read on its own).
fn sibling_from_its_file(
    f: &Found,
    entries: &[Arc<FileEntry>],
    index: &std::collections::HashMap<&str, usize>,
) -> Option<Loaded> {
    let (base, enc) = COMPRESSED.iter().find_map(|&e| Some((f.url.strip_suffix(e.ext())?.strip_suffix('.')?, e)))?;
    let file = &entries[*index.get(base)?];
    let Body::Mem(bytes) = &file.variants[enc as usize].as_ref()?.body else { return None };
    Some(Loaded {
        url: f.url.clone(),
        content_type: mime::for_name(&f.url),
        mtime: f.mtime,
        digest: Sha256::digest(&bytes[..]).into(),
        identity: (Body::Mem(bytes.clone()), bytes.len() as u64),
        encoded: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::encodings::Encoded;
    use crate::site::entry::tag_of;
    use std::fs;
    use std::path::PathBuf;

    fn site(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("hs-loader-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(d.join("sub")).unwrap();
        fs::write(d.join("index.html"), "<h1>hi</h1>").unwrap();
        fs::write(d.join("big.css"), "body { color: red; }\n".repeat(200)).unwrap();
        fs::write(d.join("sub/index.html"), "sub").unwrap();
        fs::write(d.join("pre.js"), "x".repeat(3000)).unwrap();
        fs::write(d.join("pre.js.gz"), "fake-gzip").unwrap();
        d
    }

    fn cfg(root: &Path) -> Settings {
        Settings::for_root(root)
    }

    /// A pool's quick load measures its table instead of planning it: the same files, every body the same path,
    /// and a charge that agrees with the plan's (the plan rounds each sibling's path up to its longest extension
    /// and codes the longest ETag, so it may only be a little higher). tests/footprint.rs holds the measured charge
    /// against the heap.
    #[test]
    fn a_quick_load_measures_what_the_plan_would_charge() {
        let d = site("quick");
        let value = SiteValue { clean_urls: true, ..SiteValue::default() };
        let base = Settings {
            disk_by_path: true,
            etag_from_metadata: true,
            budget: memory::Budget { limit: None, budget: Some(0) },
            ..cfg(&d)
        };
        let (planned, rp) = load(&base, &value, None, &mut |_| {}).unwrap();
        let (measured, rm) = load(&Settings { all_on_disk: true, ..base.clone() }, &value, None, &mut |_| {}).unwrap();
        assert_eq!((rm.files, rm.disk_files, rm.memory_bytes), (rp.files, rp.disk_files, 0));
        for (a, b) in planned.entries.iter().zip(&measured.entries) {
            assert_eq!(a.path, b.path);
            assert!(b.variants.iter().flatten().all(|v| matches!(v.body, Body::Path(_))), "{}", b.path);
        }
        let (p, m) = (planned.table_bytes, measured.table_bytes);
        assert!(m <= p && m * 100 >= p * 95, "measured {m} B, planned {p} B");
        assert!(rm.load_bytes > 0 && !rm.memory.table_over_budget);
    }

    /// The plan's probe entry costs at least what the entry of any real digest does, whatever the file's type,
    /// size and variants: the digest is the only input a probe makes up. The sizes and types move each header
    /// block's length across malloc's 16-byte steps, where one more byte of Huffman-coded ETag costs 16.
    #[test]
    fn the_probe_digest_makes_the_costliest_entry() {
        let entry_with = |url: &str, len: u64, siblings: usize, digest: [u8; 32]| {
            let mem = |n| (Body::Mem(Arc::from(&[][..])), n);
            let mut encoded: [Option<(Body, u64)>; encoding::COUNT] = Default::default();
            for (i, slot) in encoded.iter_mut().enumerate().skip(1).take(siblings) {
                *slot = Some(mem(len / 2 + i as u64));
            }
            let l = Loaded {
                url: url.into(),
                content_type: mime::for_name(url),
                mtime: 1_700_000_000,
                digest,
                identity: mem(len),
                encoded,
            };
            footprint::entry(&build_entry(Arc::new(Default::default()), l))
        };
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let digests: Vec<[u8; 32]> = (0..100)
            .map(|_| {
                std::array::from_fn(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
            })
            .collect();
        let mut checked = 0;
        for url in ["/index.html", "/a/style.css", "/data.json", "/blob.bin", "/logo.png", "/app.js"] {
            for len in (0..12).map(|k| 7 * 10u64.pow(k) / 3) {
                for siblings in 0..encoding::COUNT {
                    let probe = entry_with(url, len, siblings, PROBE_DIGEST);
                    for d in &digests {
                        let real = entry_with(url, len, siblings, *d);
                        assert!(
                            real <= probe,
                            "{url} {len} B {siblings} siblings: {real} B over the probe's {probe} B"
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 10_000);
    }

    #[test]
    fn loads_tree_with_indexes_and_redirects() {
        let d = site("tree");
        let (t, r) = load(&cfg(&d), &SiteValue::default(), None, &mut |_| {}).unwrap();
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert_eq!(t.files(), 5);
        assert!(matches!(t.lookup(b"/"), Some(Target::File(_))));
        assert!(matches!(t.lookup(b"/sub/"), Some(Target::File(_))));
        assert_eq!(t.lookup(b"/sub"), Some(Target::Redirect));
        assert_eq!(t.lookup(b"/nope"), None);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_sibling_is_served_as_itself_but_held_once() {
        let d = site("shared-sibling");
        let (t, r) = load(&cfg(&d), &SiteValue::default(), None, &mut |_| {}).unwrap();
        let entry = |url: &[u8]| match t.lookup(url) {
            Some(Target::File(i)) => t.entry(i),
            other => panic!("{} is not a file: {other:?}", String::from_utf8_lossy(url)),
        };
        let gz_variant = &entry(b"/pre.js").variants[Encoding::Gzip as usize].as_ref().unwrap().body;
        let (Body::Mem(variant), Body::Mem(own)) = (gz_variant, &entry(b"/pre.js.gz").identity().body) else {
            panic!("both in memory");
        };
        assert!(Arc::ptr_eq(variant, own), "one body for /pre.js's gzip variant and /pre.js.gz");
        // Every file once, the sibling's bytes not twice.
        let identities: u64 = t.entries.iter().map(|e| e.identity().len).sum();
        assert_eq!(r.memory_bytes, identities);
    }

    #[test]
    fn uses_siblings_and_never_compresses() {
        let d = site("enc");
        let (t, r) = load(&cfg(&d), &SiteValue::default(), None, &mut |_| {}).unwrap();
        let Some(Target::File(i)) = t.lookup(b"/big.css") else { panic!() };
        assert!(!t.entry(i).negotiable(), "no load-time compression");
        let Some(Target::File(i)) = t.lookup(b"/pre.js") else { panic!() };
        let e = t.entry(i);
        match &e.variant(Encoding::Gzip).body {
            Body::Mem(b) => assert_eq!(&b[..], b"fake-gzip"),
            _ => panic!(),
        }
        assert_eq!(r.pending_encodings, 1, "big.css waits for the encoder; pre.js has a sibling, the rest are small");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn attaches_the_stores_encodings_by_content() {
        let d = site("store");
        let store = Store::new(None);
        let (t, _) = load(&cfg(&d), &SiteValue::default(), Some(&store), &mut |_| {}).unwrap();
        let Some(Target::File(i)) = t.lookup(b"/big.css") else { panic!() };
        let css = t.entry(i);
        store.insert(css.digest, Encoded::compute(&fs::read(d.join("big.css")).unwrap()));
        // The same content under another name gets the variants too: the store is keyed by content.
        fs::copy(d.join("big.css"), d.join("copy.css")).unwrap();
        let (t, r) = load(&cfg(&d), &SiteValue::default(), Some(&store), &mut |_| {}).unwrap();
        for p in [&b"/big.css"[..], b"/copy.css"] {
            let Some(Target::File(i)) = t.lookup(p) else { panic!() };
            let e = t.entry(i);
            assert!(e.has(Encoding::Br) && e.has(Encoding::Gzip) && e.has(Encoding::Zstd));
            assert_eq!(&e.variant(Encoding::Zstd).etag[..], format!("\"{}-zst\"", tag_of(&e.digest)).as_bytes());
            assert!(e.variant(Encoding::Br).len < e.identity().len);
            assert_ne!(e.variant(Encoding::Br).etag, e.identity().etag);
            assert!(std::str::from_utf8(&e.identity().fields).unwrap().contains("Vary: Accept-Encoding"));
        }
        assert_eq!(r.compressed_variants, 7, "two files with br, gzip and zstd, pre.js's sibling");
        assert!(r.memory_bytes > r.bytes - 9, "variants are counted in memory");
        let off = Settings { compress: false, ..cfg(&d) };
        let (t, _) = load(&off, &SiteValue::default(), Some(&store), &mut |_| {}).unwrap();
        let Some(Target::File(i)) = t.lookup(b"/big.css") else { panic!() };
        assert!(!t.entry(i).negotiable(), "--compress=false attaches nothing");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn escaping_symlinks_are_reported_and_skipped() {
        let d = site("sym");
        let outside = std::env::temp_dir().join(format!("hs-outside-{}", std::process::id()));
        fs::write(&outside, "secret").unwrap();
        std::os::unix::fs::symlink(&outside, d.join("leak.txt")).unwrap();
        std::os::unix::fs::symlink(d.join("index.html"), d.join("alias.html")).unwrap();
        let (t, r) = load(&cfg(&d), &SiteValue::default(), None, &mut |_| {}).unwrap();
        assert_eq!(t.lookup(b"/leak.txt"), None);
        assert!(t.lookup(b"/alias.html").is_some());
        assert!(r.errors.iter().any(|e| e.contains("escapes")), "{:?}", r.errors);
        fs::remove_dir_all(&d).unwrap();
        fs::remove_file(&outside).unwrap();
    }

    #[test]
    fn large_files_stay_on_disk() {
        let d = site("disk");
        let c = Settings { max_memory_file_size: 100, ..cfg(&d) };
        let (t, r) = load(&c, &SiteValue::default(), None, &mut |_| {}).unwrap();
        let Some(Target::File(i)) = t.lookup(b"/big.css") else { panic!() };
        assert!(matches!(t.entry(i).identity().body, Body::Disk(_)));
        assert!(!t.entry(i).negotiable());
        assert!(r.disk_files >= 2);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn over_the_budget_files_and_their_siblings_are_on_disk() {
        let d = site("budget");
        // Costs: index.html 11, sub/index.html 3, pre.js 3000 + 9 (its sibling pre.js.gz costs nothing of its own
        // and goes where pre.js goes), big.css 4200. A budget of 0 puts every body on disk; the table is still
        // charged, and does not fit.
        let c = Settings { budget: memory::Budget::of(Some(0), Some(0)), ..cfg(&d) };
        let (t, r) = load(&c, &SiteValue::default(), None, &mut |_| {}).unwrap();
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        let on_disk = |t: &Table, p: &[u8]| {
            let Some(Target::File(i)) = t.lookup(p) else { panic!() };
            matches!(t.entry(i).identity().body, Body::Disk(_))
        };
        for p in [&b"/index.html"[..], b"/sub/index.html", b"/pre.js", b"/pre.js.gz", b"/big.css"] {
            assert!(on_disk(&t, p), "{}", String::from_utf8_lossy(p));
        }
        let Some(Target::File(i)) = t.lookup(b"/pre.js") else { panic!() };
        let e = t.entry(i);
        assert!(e.has(Encoding::Gzip), "a disk-served file keeps its sibling");
        assert!(matches!(e.variant(Encoding::Gzip).body, Body::Disk(_)) && e.variant(Encoding::Gzip).len == 9);
        assert!(!e.has(Encoding::Br));
        let Some(Target::File(i)) = t.lookup(b"/big.css") else { panic!() };
        assert!(!t.entry(i).negotiable(), "disk-served files get no encodings");
        assert_eq!(r.memory_bytes, 0);
        assert_eq!(r.memory.disk_bytes, 11 + 3 + 3000 + 9 + 4200);
        assert_eq!((r.memory.budget, r.memory.limit), (Some(0), None));
        assert!(r.memory.table_over_budget && r.memory.table_bytes > 6 * footprint::OPEN_FILE);
        // The fit limit holds the table (its entries with memory bodies), the load's records and every file.
        let entries = r.memory.table_bytes - 6 * (footprint::DISK_BODY - footprint::MEM_BODY);
        assert_eq!(r.memory.fit_limit, memory::fit_limit(entries + r.load_bytes + 11 + 3 + 3009 + 4200));
        assert_eq!((t.memory, t.memory_bytes, t.table_bytes), (r.memory, 0, r.memory.table_bytes));

        // A budget a little under that table: the files that cost less in memory than their open files go there
        // (the index pages; pre.js with its sibling, 3,009 bytes against three open files), which makes room;
        // big.css (4,200 bytes, one open file) would pass the budget and stays on disk.
        let all_on_disk = r.memory.table_bytes + r.load_bytes;
        let c = Settings { budget: memory::Budget::of(Some(0), Some(all_on_disk - 3000)), ..c };
        let (t, r) = load(&c, &SiteValue::default(), None, &mut |_| {}).unwrap();
        for p in [&b"/index.html"[..], b"/sub/index.html", b"/pre.js", b"/pre.js.gz"] {
            assert!(!on_disk(&t, p), "{}", String::from_utf8_lossy(p));
        }
        assert!(on_disk(&t, b"/big.css"));
        assert_eq!((r.memory_bytes, r.memory.disk_bytes, r.memory.over_budget_files), (3023, 4200, 1));
        assert!(!r.memory.table_over_budget);
        assert!(r.memory.table_bytes + r.load_bytes + r.memory_bytes <= all_on_disk - 3000);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn attached_variants_stay_within_the_budget() {
        let d = site("variants");
        let store = Store::new(None);
        let data = fs::read(d.join("big.css")).unwrap();
        store.insert(Sha256::digest(&data).into(), Encoded::compute(&data));
        // What the table and the load cost with every body in memory (7,223 bytes: pre.js.gz is held once).
        let c = Settings { budget: memory::Budget::of(Some(0), None), ..cfg(&d) };
        let (_, r) = load(&c, &SiteValue::default(), None, &mut |_| {}).unwrap();
        let (table, records) = (r.memory.table_bytes, r.load_bytes);
        let mut attached = Vec::new();
        for extra in [0, 60, 2_000, 50_000] {
            let budget = table + records + 7223 + extra;
            let c = Settings { budget: memory::Budget::of(Some(0), Some(budget)), ..c.clone() };
            let (t, r) = load(&c, &SiteValue::default(), Some(&store), &mut |_| {}).unwrap();
            assert_eq!(r.memory.disk_bytes, 0);
            // Whatever is attached (variant bytes, the header blocks of three more variants) stays within it.
            assert!(t.memory_bytes + t.table_bytes <= budget, "{extra}: {} + {}", t.memory_bytes, t.table_bytes);
            let Some(Target::File(i)) = t.lookup(b"/big.css") else { panic!() };
            let has = t.entry(i).has(Encoding::Br);
            assert_eq!(t.memory_bytes > 7223, has, "{extra}");
            assert_eq!(t.table_bytes > table, has, "{extra}: the new header blocks are charged");
            attached.push(has);
        }
        assert_eq!(attached.last(), Some(&true), "a budget with room attaches the encodings");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn missing_root_is_an_error() {
        let c = cfg(Path::new("/nonexistent/hyperstatic"));
        assert!(load(&c, &SiteValue::default(), None, &mut |_| {}).is_err());
    }
}
