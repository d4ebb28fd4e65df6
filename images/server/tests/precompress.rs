//! `hyperstatic-server precompress DIR`, the build-time encoder of baked images, against the real binary: the
//! siblings it writes decode to their file, a rerun leaves fresh siblings alone, a changed file gets a new one,
//! and a server started on the result has nothing left to encode and serves brotli from its first request.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use common::{tempdir, Server};

fn precompress(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"))
        .arg("precompress")
        .args(args)
        .output()
        .expect("run precompress");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

fn unbrotli(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    brotli::Decompressor::new(b, 4096).read_to_end(&mut out).unwrap();
    out
}

fn ungzip(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(b).read_to_end(&mut out).unwrap();
    out
}

fn page(n: usize) -> Vec<u8> {
    format!("<!doctype html><title>page</title>\n{}", "<p>the same paragraph, again and again.</p>\n".repeat(n))
        .into_bytes()
}

/// Sets a file's modification time into the past, so a sibling written now is newer (file systems with coarse
/// timestamps would otherwise make "newer" depend on when the second ticks).
fn age(p: &Path) {
    let f = std::fs::File::options().write(true).open(p).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(3600)).unwrap();
}

#[test]
fn writes_siblings_that_decode_and_skips_what_is_not_worth_it() {
    let site = tempdir("precompress-basic");
    std::fs::create_dir_all(site.join("docs")).unwrap();
    let html = page(200);
    std::fs::write(site.join("docs/index.html"), &html).unwrap();
    std::fs::write(site.join("tiny.html"), b"<p>short</p>").unwrap(); // under 1 KiB: not worth encoding
    let noise: Vec<u8> = (0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(site.join("photo.png"), &noise).unwrap(); // not a compressible type
    for f in ["docs/index.html", "tiny.html", "photo.png"] {
        age(&site.join(f));
    }

    let (ok, out) = precompress(&[site.to_str().unwrap()]);
    assert!(ok, "precompress failed: {out}");
    assert!(out.contains("1 files encoded"), "summary: {out}");
    let br = std::fs::read(site.join("docs/index.html.br")).expect("a .br sibling");
    let gz = std::fs::read(site.join("docs/index.html.gz")).expect("a .gz sibling");
    assert!(br.len() < html.len() && gz.len() < html.len());
    assert_eq!(unbrotli(&br), html);
    assert_eq!(ungzip(&gz), html);
    for absent in ["tiny.html.br", "tiny.html.gz", "photo.png.br", "photo.png.gz"] {
        assert!(!site.join(absent).exists(), "{absent} should not be written");
    }
}

#[test]
fn a_rerun_encodes_only_what_changed_and_force_redoes_everything() {
    let site = tempdir("precompress-rerun");
    for name in ["a.html", "b.html", "c.css"] {
        std::fs::write(site.join(name), page(100)).unwrap();
        age(&site.join(name));
    }
    let dir = site.to_str().unwrap();
    let (ok, out) = precompress(&[dir]);
    assert!(ok && out.contains("3 files encoded ("), "first run: {out}");

    let (ok, out) = precompress(&[dir]);
    assert!(ok && out.contains("0 files encoded") && out.contains("3 up to date"), "rerun: {out}");

    // b.html changes (its new content is newer than its siblings): only it is encoded again.
    let changed = page(300);
    std::fs::write(site.join("b.html"), &changed).unwrap();
    let later = SystemTime::now() + Duration::from_secs(60);
    std::fs::File::options().write(true).open(site.join("b.html")).unwrap().set_modified(later).unwrap();
    let (ok, out) = precompress(&[dir]);
    assert!(ok && out.contains("1 files encoded") && out.contains("2 up to date"), "after a change: {out}");
    assert_eq!(unbrotli(&std::fs::read(site.join("b.html.br")).unwrap()), changed);
    assert_eq!(ungzip(&std::fs::read(site.join("b.html.gz")).unwrap()), changed);

    let (ok, out) = precompress(&["--force", dir]);
    assert!(ok && out.contains("3 files encoded"), "--force: {out}");
}

#[test]
fn a_missing_directory_fails_with_its_name() {
    let (ok, out) = precompress(&["/nonexistent/hyperstatic-site"]);
    assert!(!ok);
    assert!(out.contains("/nonexistent/hyperstatic-site"), "error names the directory: {out}");
}

#[test]
fn a_precompressed_site_serves_brotli_at_once_with_nothing_to_encode() {
    let site = tempdir("precompress-serve");
    let html = page(200);
    std::fs::write(site.join("index.html"), &html).unwrap();
    age(&site.join("index.html"));
    let (ok, out) = precompress(&[site.to_str().unwrap()]);
    assert!(ok, "{out}");

    let s = Server::start(&site, &[]);
    // No wait_encoded here: a baked, precompressed site must have nothing pending from its first request on.
    assert_eq!(s.metric("hyperstatic_content_encodings_pending"), 0.0);
    let r = s.get("/", &[("Accept-Encoding", "gzip, deflate, br")]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-encoding"), Some("br"));
    assert_eq!(unbrotli(&r.body), html);
    let r = s.get("/", &[("Accept-Encoding", "gzip")]);
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(ungzip(&r.body), html);
    assert_eq!(s.metric("hyperstatic_content_encodings_total{source=\"computed\"}"), 0.0);
}
