//! Loads a site root into a content Table: walks the tree (following symlinks that stay inside the root),
//! reads files, picks up sibling `.br`/`.gz` variants, compresses the rest at load time, hashes ETags and
//! precomputes header blocks. Used at start, on reload, and by `--check`.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use sha2::{Digest, Sha256};

use crate::config::Config;
use crate::content::{Body, FileEntry, Table, Target, Variant};
use crate::encoding::Encoding;
use crate::memory::{self, Reserve};
use crate::{headers, mime};

/// Files smaller than this are not worth compressing.
const COMPRESS_MIN: u64 = 1024;

#[derive(Default, Debug)]
pub struct Report {
    pub files: usize,
    pub bytes: u64,
    pub memory_bytes: u64,
    pub disk_files: usize,
    pub compressed_variants: usize,
    /// Limit, budget, bytes on disk, fit limit (memory.rs).
    pub memory: memory::Summary,
    /// Problems that make `--check` fail; at serve time the files are skipped and logged.
    pub errors: Vec<String>,
    /// How many of the errors are files or directories that could not be read (dangling symlinks, I/O,
    /// permissions) as opposed to policy (escaping symlinks, names). A reload with unreadable entries is
    /// treated as a broken tree and keeps the old content.
    pub unreadable: usize,
}

struct Found {
    url: String,
    fs_path: PathBuf,
    len: u64,
    mtime: i64,
}

/// Walks `root`, calling `on_dir` for each directory before it is read (the reload watcher uses it to add
/// inotify watches without a race).
fn walk(root: &Path, on_dir: &mut dyn FnMut(&Path), report: &mut Report) -> Result<(Vec<Found>, Vec<String>), String> {
    let canon_root = fs::canonicalize(root).map_err(|e| format!("site root {}: {e}", root.display()))?;
    if !canon_root.is_dir() {
        return Err(format!("site root {} is not a directory", root.display()));
    }
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![(root.to_path_buf(), String::new())];
    seen.insert(canon_root.clone());
    while let Some((dir, url)) = stack.pop() {
        on_dir(&dir);
        let rd = match fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) => {
                if url.is_empty() {
                    return Err(format!("site root {}: {e}", root.display()));
                }
                report.errors.push(format!("{}: unreadable directory: {e}", dir.display()));
                report.unreadable += 1;
                continue;
            }
        };
        dirs.push(url.clone());
        let mut names: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
        names.sort();
        for name in names {
            let name_str = match name.to_str() {
                Some(s) => s.to_string(),
                None => {
                    report.errors.push(format!("{}: file name is not UTF-8", dir.join(&name).display()));
                    continue;
                }
            };
            // Kubernetes volume internals (`..data`, `..2024_...`) are never served.
            if name_str.starts_with("..") || name_str.contains('\\') {
                continue;
            }
            let path = dir.join(&name);
            let child_url = format!("{url}/{name_str}");
            let canon = match fs::canonicalize(&path) {
                Ok(c) => c,
                Err(e) => {
                    report.errors.push(format!("{}: {e}", path.display()));
                    report.unreadable += 1;
                    continue;
                }
            };
            if !canon.starts_with(&canon_root) {
                report.errors.push(format!(
                    "{}: symlink escapes the site root (to {})",
                    path.display(),
                    canon.display()
                ));
                continue;
            }
            let meta = match fs::metadata(&canon) {
                Ok(m) => m,
                Err(e) => {
                    report.errors.push(format!("{}: {e}", path.display()));
                    report.unreadable += 1;
                    continue;
                }
            };
            if meta.is_dir() {
                if seen.insert(canon) {
                    stack.push((path, child_url));
                }
            } else if meta.is_file() {
                let mtime = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_secs() as i64);
                files.push(Found { url: child_url, fs_path: path, len: meta.len(), mtime });
            }
        }
    }
    files.sort_by(|a, b| a.url.cmp(&b.url));
    Ok((files, dirs))
}

fn etag_base(data: &[u8]) -> String {
    let d = Sha256::digest(data);
    d[..10].iter().map(|b| format!("{b:02x}")).collect()
}

fn etag_file(f: &mut File) -> std::io::Result<String> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize()[..10].iter().map(|b| format!("{b:02x}")).collect())
}

fn brotli(data: &[u8]) -> Vec<u8> {
    let quality = if data.len() <= 256 * 1024 { 11 } else { 9 };
    let mut out = Vec::with_capacity(data.len() / 2);
    {
        let mut w = brotli::CompressorWriter::new(&mut out, 4096, quality, 22);
        w.write_all(data).expect("writing to a Vec");
    }
    out
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::with_capacity(data.len() / 2), flate2::Compression::best());
    e.write_all(data).expect("writing to a Vec");
    e.finish().expect("finishing gzip into a Vec")
}

/// Everything needed to build one FileEntry, computed possibly in parallel.
struct Loaded {
    url: String,
    content_type: mime::ContentType,
    mtime: i64,
    identity: (Body, u64, String),
    encoded: [Option<(Body, u64)>; 3],
}

/// `in_memory`: the memory plan's decision (memory.rs); `reserve`: the budget left for load-time variants.
fn load_one(
    f: &Found,
    siblings: &HashSet<&str>,
    cfg: &Config,
    in_memory: bool,
    reserve: &Reserve,
) -> Result<Loaded, String> {
    let content_type = mime::for_name(&f.url);
    let open = |p: &Path| File::open(p).map_err(|e| format!("{}: {e}", p.display()));
    let mut encoded: [Option<(Body, u64)>; 3] = [None, None, None];
    let identity = if !in_memory {
        // memory: served from disk, hashed streaming; its siblings are served from disk too.
        let mut file = open(&f.fs_path)?;
        let tag = etag_file(&mut file).map_err(|e| format!("{}: {e}", f.fs_path.display()))?;
        for (enc, ext) in [(Encoding::Br, "br"), (Encoding::Gzip, "gz")] {
            if siblings.contains(format!("{}.{ext}", f.url).as_str()) {
                let p = PathBuf::from(format!("{}.{ext}", f.fs_path.display()));
                let sfile = open(&p)?;
                let n = sfile.metadata().map_err(|e| format!("{}: {e}", p.display()))?.len();
                encoded[enc as usize] = Some((Body::Disk(sfile), n));
            }
        }
        (Body::Disk(file), f.len, tag)
    } else {
        let data = fs::read(&f.fs_path).map_err(|e| format!("{}: {e}", f.fs_path.display()))?;
        let tag = etag_base(&data);
        let want_compress =
            cfg.compress && content_type.compressible && data.len() as u64 >= COMPRESS_MIN && reserve.left() > 0;
        for (enc, ext) in [(Encoding::Br, "br"), (Encoding::Gzip, "gz")] {
            let sib = format!("{}.{ext}", f.url);
            if siblings.contains(sib.as_str()) {
                let p = PathBuf::from(format!("{}.{ext}", f.fs_path.display()));
                let sdata = fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
                let n = sdata.len() as u64;
                encoded[enc as usize] = Some((Body::Mem(sdata.into_boxed_slice()), n));
            } else if want_compress {
                let c = if enc == Encoding::Br { brotli(&data) } else { gzip(&data) };
                if c.len() < data.len() && reserve.take(c.len() as u64) {
                    let n = c.len() as u64;
                    encoded[enc as usize] = Some((Body::Mem(c.into_boxed_slice()), n));
                }
            }
        }
        let n = data.len() as u64;
        (Body::Mem(data.into_boxed_slice()), n, tag)
    };
    Ok(Loaded { url: f.url.clone(), content_type, mtime: f.mtime, identity, encoded })
}

/// The first `--cache-control` rule whose glob matches wins.
fn cache_control_for<'a>(cfg: &'a Config, url: &str) -> &'a str {
    cfg.cache_control.iter().find(|r| r.glob.matches(url)).map_or(cfg.default_cache_control.as_str(), |r| &r.value)
}

fn build_entry(l: Loaded, cfg: &Config) -> FileEntry {
    let negotiable = l.encoded.iter().any(Option::is_some);
    let cc = cache_control_for(cfg, &l.url);
    let extra: Vec<(String, String)> =
        cfg.headers.iter().filter(|h| h.applies_to(&l.url)).map(|h| (h.name.clone(), h.value.clone())).collect();
    let (id_body, id_len, tag) = l.identity;
    let mk = |body: Body, len: u64, enc: Encoding| {
        let etag = match enc {
            Encoding::Identity => format!("\"{tag}\""),
            Encoding::Br => format!("\"{tag}-br\""),
            Encoding::Gzip => format!("\"{tag}-gz\""),
        };
        let inputs = headers::Inputs {
            mime: &l.content_type.value,
            etag: &etag,
            last_modified: l.mtime,
            cache_control: cc,
            negotiable,
            encoding: enc,
            extra: &extra,
        };
        let (fields, head_200, fields_304) = headers::build(&inputs, len);
        Variant {
            body,
            len,
            etag: etag.into_bytes().into_boxed_slice(),
            fields: fields.into_boxed_slice(),
            head_200: head_200.into_boxed_slice(),
            fields_304: fields_304.into_boxed_slice(),
        }
    };
    let [_, br, gz] = l.encoded;
    let variants = [
        Some(mk(id_body, id_len, Encoding::Identity)),
        br.map(|(b, n)| mk(b, n, Encoding::Br)),
        gz.map(|(b, n)| mk(b, n, Encoding::Gzip)),
    ];
    FileEntry { path: l.url, mime: l.content_type.value.into_boxed_str(), last_modified: l.mtime, variants }
}

/// Loads the site. Files that cannot be read are left out and listed in the report; an unreadable root is
/// an error (a reload then keeps the old table).
pub fn load(cfg: &Config, on_dir: &mut dyn FnMut(&Path)) -> Result<(Table, Report), String> {
    let mut report = Report::default();
    let (found, dirs) = walk(&cfg.root, on_dir, &mut report)?;
    let urls: HashSet<&str> = found.iter().map(|f| f.url.as_str()).collect();
    // memory: which files are held in memory (the rest, with their siblings, are served from disk).
    let budget = memory::Budget::of(cfg);
    let plan = memory::plan(&plan_items(&found), cfg.max_memory_file_size, budget.budget);
    let reserve = Reserve::new(budget.budget.map(|b| b.saturating_sub(plan.memory_bytes)));
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    let threads = memory::load_threads(cpus, budget.limit);
    let chunk = found.len().div_ceil(threads).max(1);
    let results: Vec<Result<Loaded, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = found
            .chunks(chunk)
            .zip(plan.in_memory.chunks(chunk))
            .map(|(part, mem)| {
                let (urls, reserve) = (&urls, &reserve);
                s.spawn(move || {
                    part.iter().zip(mem).map(|(f, &m)| load_one(f, urls, cfg, m, reserve)).collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("loader thread panicked")).collect()
    });
    let mut t = Table::default();
    for r in results {
        match r {
            Ok(l) => {
                let e = build_entry(l, cfg);
                report.files += 1;
                report.bytes += e.identity().len;
                if matches!(e.identity().body, Body::Disk(_)) {
                    report.memory.disk_bytes += e.identity().len;
                }
                for v in e.variants.iter().flatten() {
                    match v.body {
                        Body::Mem(_) => report.memory_bytes += v.len,
                        Body::Disk(_) => report.disk_files += 1,
                    }
                }
                report.compressed_variants += e.variants[1..].iter().flatten().count();
                let idx = t.entries.len() as u32;
                t.map.insert(e.path.as_bytes().into(), Target::File(idx));
                t.entries.push(e);
            }
            Err(e) => {
                report.errors.push(e);
                report.unreadable += 1;
            }
        }
    }
    for d in &dirs {
        let slash = format!("{d}/");
        if !d.is_empty() {
            t.map.entry(d.as_bytes().into()).or_insert(Target::Redirect);
        }
        if let Some(Target::File(i)) = t.map.get(format!("{slash}index.html").as_bytes()).copied() {
            t.map.insert(slash.as_bytes().into(), Target::File(i));
        }
    }
    t.spa_index = match t.map.get(&b"/index.html"[..]) {
        Some(Target::File(i)) => Some(*i),
        _ => None,
    };
    if let Some(p) = &cfg.not_found_page {
        match t.map.get(p.as_bytes()) {
            Some(Target::File(i)) => t.not_found = Some(*i),
            _ => report.errors.push(format!("--not-found-page {p}: no such file in the site")),
        }
    }
    t.bytes = report.bytes;
    t.memory_bytes = report.memory_bytes;
    report.memory = memory::Summary {
        limit: budget.limit,
        budget: budget.budget,
        over_budget_files: plan.over_budget_files,
        over_budget_bytes: plan.over_budget_bytes,
        fit_limit: plan.fit_limit,
        ..report.memory
    };
    t.memory = report.memory;
    Ok((t, report))
}

/// memory: the planner's view of the walked files: each with the sizes of the sibling variants it will serve.
fn plan_items(found: &[Found]) -> Vec<memory::Item> {
    let lens: std::collections::HashMap<&str, u64> = found.iter().map(|f| (f.url.as_str(), f.len)).collect();
    found
        .iter()
        .map(|f| memory::Item {
            identity: f.len,
            variants: ["br", "gz"].iter().filter_map(|ext| lens.get(format!("{}.{ext}", f.url).as_str())).sum(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn cfg(root: &Path) -> Config {
        Config { root: root.to_path_buf(), ..Config::default() }
    }

    #[test]
    fn loads_tree_with_indexes_and_redirects() {
        let d = site("tree");
        let (t, r) = load(&cfg(&d), &mut |_| {}).unwrap();
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert_eq!(t.files(), 5);
        assert!(matches!(t.lookup(b"/"), Some(Target::File(_))));
        assert!(matches!(t.lookup(b"/sub/"), Some(Target::File(_))));
        assert_eq!(t.lookup(b"/sub"), Some(Target::Redirect));
        assert_eq!(t.lookup(b"/nope"), None);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn compresses_and_uses_siblings() {
        let d = site("enc");
        let (t, _) = load(&cfg(&d), &mut |_| {}).unwrap();
        let Some(Target::File(i)) = t.lookup(b"/big.css") else { panic!() };
        let e = t.entry(i);
        assert!(e.has(Encoding::Br) && e.has(Encoding::Gzip));
        assert!(e.variant(Encoding::Br).len < e.identity().len);
        assert_ne!(e.variant(Encoding::Br).etag, e.identity().etag);
        let Some(Target::File(i)) = t.lookup(b"/pre.js") else { panic!() };
        let e = t.entry(i);
        match &e.variant(Encoding::Gzip).body {
            Body::Mem(b) => assert_eq!(&b[..], b"fake-gzip"),
            _ => panic!(),
        }
        let Some(Target::File(i)) = t.lookup(b"/index.html") else { panic!() };
        assert!(!t.entry(i).negotiable(), "small files are not compressed");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn escaping_symlinks_are_reported_and_skipped() {
        let d = site("sym");
        let outside = std::env::temp_dir().join(format!("hs-outside-{}", std::process::id()));
        fs::write(&outside, "secret").unwrap();
        std::os::unix::fs::symlink(&outside, d.join("leak.txt")).unwrap();
        std::os::unix::fs::symlink(d.join("index.html"), d.join("alias.html")).unwrap();
        let (t, r) = load(&cfg(&d), &mut |_| {}).unwrap();
        assert_eq!(t.lookup(b"/leak.txt"), None);
        assert!(t.lookup(b"/alias.html").is_some());
        assert!(r.errors.iter().any(|e| e.contains("escapes")), "{:?}", r.errors);
        fs::remove_dir_all(&d).unwrap();
        fs::remove_file(&outside).unwrap();
    }

    #[test]
    fn large_files_stay_on_disk() {
        let d = site("disk");
        let c = Config { max_memory_file_size: 100, ..cfg(&d) };
        let (t, r) = load(&c, &mut |_| {}).unwrap();
        let Some(Target::File(i)) = t.lookup(b"/big.css") else { panic!() };
        assert!(matches!(t.entry(i).identity().body, Body::Disk(_)));
        assert!(!t.entry(i).negotiable());
        assert!(r.disk_files >= 2);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn over_the_budget_files_and_their_siblings_are_on_disk() {
        let d = site("budget");
        // Costs: index.html 11, sub/index.html 3, pre.js.gz 9, pre.js 3000 + 9, big.css 4200. A budget of 30 holds
        // the three small ones; load-time compression finds no budget left.
        let c = Config { memory_limit: Some(0), memory_budget: Some(30), ..cfg(&d) };
        let (t, r) = load(&c, &mut |_| {}).unwrap();
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        let on_disk = |p: &[u8]| {
            let Some(Target::File(i)) = t.lookup(p) else { panic!() };
            matches!(t.entry(i).identity().body, Body::Disk(_))
        };
        assert!(!on_disk(b"/index.html") && !on_disk(b"/sub/index.html") && !on_disk(b"/pre.js.gz"));
        assert!(on_disk(b"/pre.js") && on_disk(b"/big.css"));
        let Some(Target::File(i)) = t.lookup(b"/pre.js") else { panic!() };
        let e = t.entry(i);
        assert!(e.has(Encoding::Gzip), "a disk-served file keeps its sibling");
        assert!(matches!(e.variant(Encoding::Gzip).body, Body::Disk(_)) && e.variant(Encoding::Gzip).len == 9);
        assert!(!e.has(Encoding::Br));
        let Some(Target::File(i)) = t.lookup(b"/big.css") else { panic!() };
        assert!(!t.entry(i).negotiable(), "disk-served files are not compressed at load time");
        assert_eq!(r.memory_bytes, 23);
        assert!(r.memory_bytes <= 30);
        assert_eq!(r.memory.disk_bytes, 3000 + 4200);
        assert_eq!(r.memory.over_budget_files, 2);
        assert_eq!(r.memory.budget, Some(30));
        assert_eq!(r.memory.limit, None);
        assert_eq!(r.memory.fit_limit, memory::fit_limit(11 + 3 + 9 + 3009 + 4200));
        assert_eq!((t.memory, t.memory_bytes), (r.memory, 23));
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn load_time_variants_stay_within_the_budget() {
        let d = site("variants");
        // Everything fits (7232 bytes), but only 60 bytes are left for load-time compression of big.css
        // (its brotli variant is about 40 bytes, its gzip one about 60): whatever is made fits the budget.
        let c = Config { memory_limit: Some(0), memory_budget: Some(7232 + 60), ..cfg(&d) };
        let (t, r) = load(&c, &mut |_| {}).unwrap();
        assert_eq!(r.memory.disk_bytes, 0);
        assert!(r.memory_bytes <= 7232 + 60, "{}", r.memory_bytes);
        assert!(t.memory_bytes > 7232, "some variant was made: {}", t.memory_bytes);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn missing_root_is_an_error() {
        let c = cfg(Path::new("/nonexistent/hyperstatic"));
        assert!(load(&c, &mut |_| {}).is_err());
    }
}
