//! `hyperstatic-server precompress [--force] DIR`: writes `x.br`, `x.gz` and `x.zst` beside every file the server
//! would encode (compressible type, at least 1 KiB), each only when smaller than the file. Run at image build time, so
//! a baked pod serves every variant the moment it starts and never compresses. The loader takes siblings as
//! they are; this is the one place that decides they are up to date: a sibling at least as new as its file is
//! kept (a rerun after changing three files encodes three files), `--force` rewrites them all, and a sibling
//! whose new encoding would not be smaller is removed rather than left stale.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Instant, SystemTime};

use clap::Parser;

use crate::compress::codec as compress;
use crate::site::{loader, mime};

#[derive(Parser, Debug)]
#[command(
    name = "hyperstatic-server precompress",
    about = "Writes .br, .gz and .zst siblings beside the site's compressible files (for baked images: no compression at start)"
)]
struct Args {
    /// Rewrite every sibling, even those newer than their file
    #[arg(long)]
    force: bool,
    /// Site directory, as the server will see it
    dir: PathBuf,
}

#[derive(Default)]
struct Tally {
    encoded: AtomicUsize,
    up_to_date: AtomicUsize,
    not_smaller: AtomicUsize,
    bytes_in: AtomicU64,
    bytes_br: AtomicU64,
    bytes_gz: AtomicU64,
    bytes_zst: AtomicU64,
    errors: std::sync::Mutex<Vec<String>>,
}

/// Entry point: `args` are those after `precompress`. Returns the exit code.
pub fn main(args: impl IntoIterator<Item = OsString>) -> i32 {
    let a = match Args::try_parse_from(std::iter::once(OsString::from("precompress")).chain(args)) {
        Ok(a) => a,
        Err(e) => e.exit(),
    };
    let started = Instant::now();
    let mut report = loader::Report::default();
    let found = match loader::walk(&a.dir, loader::DEFAULT_CAPS, &mut |_| {}, &mut report) {
        Ok((found, _)) => found,
        Err(e) => {
            eprintln!("precompress: {e}");
            return 1;
        }
    };
    for e in &report.errors {
        eprintln!("precompress: skipped: {e}");
    }
    let todo: Vec<&loader::Found> = found
        .iter()
        .filter(|f| !compress::is_sibling(&f.url) && compress::worth(mime::for_name(&f.url).compressible, f.len))
        .collect();
    let tally = Tally::default();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for part in todo.chunks(todo.len().div_ceil(threads).max(1)) {
            let tally = &tally;
            s.spawn(move || part.iter().for_each(|f| one(&f.fs_path, a.force, tally)));
        }
    });
    let errors = tally.errors.into_inner().unwrap_or_else(|e| e.into_inner());
    for e in &errors {
        eprintln!("precompress: error: {e}");
    }
    println!(
        "precompress {}: {} files encoded ({} bytes -> brotli {}, gzip {}, zstd {}), {} up to date, {} not worth it, {} errors, {:.1} s",
        a.dir.display(),
        tally.encoded.load(Ordering::Relaxed),
        tally.bytes_in.load(Ordering::Relaxed),
        tally.bytes_br.load(Ordering::Relaxed),
        tally.bytes_gz.load(Ordering::Relaxed),
        tally.bytes_zst.load(Ordering::Relaxed),
        tally.up_to_date.load(Ordering::Relaxed),
        tally.not_smaller.load(Ordering::Relaxed),
        errors.len(),
        started.elapsed().as_secs_f64()
    );
    i32::from(!errors.is_empty())
}

fn mtime(p: &Path) -> Option<SystemTime> {
    fs::metadata(p).and_then(|m| m.modified()).ok()
}

fn sibling(p: &Path, ext: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(format!(".{ext}"));
    PathBuf::from(s)
}

/// Brings `path`'s siblings up to date.
fn one(path: &Path, force: bool, tally: &Tally) {
    let (br_path, gz_path, zst_path) = (sibling(path, "br"), sibling(path, "gz"), sibling(path, "zst"));
    let src_time = mtime(path);
    let fresh = |p: &Path| matches!((mtime(p), src_time), (Some(s), Some(f)) if s >= f);
    if !force && fresh(&br_path) && fresh(&gz_path) && fresh(&zst_path) {
        tally.up_to_date.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let result = fs::read(path).map_err(|e| e.to_string()).and_then(|data| {
        let compress::All { br, gz, zst } = compress::all(&data);
        if br.is_none() && gz.is_none() && zst.is_none() {
            tally.not_smaller.fetch_add(1, Ordering::Relaxed);
        } else {
            tally.encoded.fetch_add(1, Ordering::Relaxed);
            tally.bytes_in.fetch_add(data.len() as u64, Ordering::Relaxed);
        }
        for (p, body, sum) in
            [(&br_path, br, &tally.bytes_br), (&gz_path, gz, &tally.bytes_gz), (&zst_path, zst, &tally.bytes_zst)]
        {
            match body {
                Some(b) => {
                    sum.fetch_add(b.len() as u64, Ordering::Relaxed);
                    write_whole(p, &b)?;
                }
                None => match fs::remove_file(p) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(format!("{}: {e}", p.display())),
                },
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        tally.errors.lock().unwrap_or_else(|e| e.into_inner()).push(format!("{}: {e}", path.display()));
    }
}

/// Written aside and renamed: a build interrupted half-way never leaves a truncated sibling the server would serve.
fn write_whole(p: &Path, data: &[u8]) -> Result<(), String> {
    let tmp = sibling(p, "tmp");
    fs::write(&tmp, data).and_then(|()| fs::rename(&tmp, p)).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        format!("{}: {e}", p.display())
    })
}
