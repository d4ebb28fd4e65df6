//! zstd as a content coding, against the real binary: the background encoder makes it, `.zst` siblings are
//! served as the file's variant byte for byte, `precompress` writes them, `--compress-cache` keeps them, and
//! Accept-Encoding decides by q-value with br > zstd > gzip among equal q.

mod common;

use std::io::Read;

use common::{tempdir, Server};

fn page(n: usize) -> Vec<u8> {
    format!("<!doctype html><title>zstd</title>\n{}", "<p>a paragraph worth compressing.</p>\n".repeat(n)).into_bytes()
}

fn unzstd(b: &[u8]) -> Vec<u8> {
    zstd::decode_all(b).expect("a valid zstd frame")
}

fn decode(encoding: Option<&str>, b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match encoding {
        None => out.extend_from_slice(b),
        Some("zstd") => out = unzstd(b),
        Some("br") => {
            brotli::Decompressor::new(b, 4096).read_to_end(&mut out).unwrap();
        }
        Some("gzip") => {
            flate2::read::GzDecoder::new(b).read_to_end(&mut out).unwrap();
        }
        Some(other) => panic!("unexpected Content-Encoding {other}"),
    }
    out
}

#[test]
fn negotiation_matrix_over_the_encoders_variants() {
    let d = tempdir("zstd-matrix");
    let html = page(300);
    std::fs::write(d.join("index.html"), &html).unwrap();
    let s = Server::start(&d, &["--compress"]);
    s.wait_encoded();
    // (Accept-Encoding, the coding expected); None is identity.
    let matrix: &[(&str, Option<&str>)] = &[
        ("zstd", Some("zstd")),
        ("gzip, zstd", Some("zstd")),
        ("zstd, gzip", Some("zstd")),
        ("gzip, deflate, br, zstd", Some("br")),
        ("zstd, br", Some("br")),
        ("br;q=0.5, zstd", Some("zstd")),
        ("br;q=0.5, zstd;q=0.6, gzip;q=0.7", Some("gzip")),
        ("br, zstd;q=0", Some("br")),
        ("br;q=0, zstd;q=0, gzip", Some("gzip")),
        ("zstd;q=0, *", Some("br")),
        ("*;q=0.3, br;q=0.2", Some("zstd")),
        ("zstd;q=0.5, identity", None),
        ("zstd;q=0", None),
        ("deflate", None),
        ("", None),
    ];
    for &(accept, want) in matrix {
        let r = s.get("/index.html", &[("Accept-Encoding", accept)]);
        assert_eq!(r.status, 200, "{accept:?}");
        assert_eq!(r.header("content-encoding"), want, "Accept-Encoding: {accept:?}");
        assert_eq!(r.header("vary"), Some("Accept-Encoding"), "{accept:?}");
        assert_eq!(decode(want, &r.body), html, "{accept:?}: the body decodes to the file");
    }
    let z = s.get("/index.html", &[("Accept-Encoding", "zstd")]);
    assert!(z.header("etag").unwrap().ends_with("-zst\""), "{:?}", z.header("etag"));
    assert!(z.body.len() < html.len() / 5, "zstd compresses: {} of {}", z.body.len(), html.len());
    assert!(s.admin_get("/content").text().contains("/index.html\tmemory\tidentity,br,gzip,zstd"));
}

#[test]
fn zst_siblings_are_the_files_variant_byte_for_byte() {
    let d = tempdir("zstd-sibling");
    let css = "body { margin: 0 auto; max-width: 60em; }\n".repeat(100).into_bytes();
    let sibling = zstd::bulk::compress(&css, 3).unwrap();
    std::fs::write(d.join("site.css"), &css).unwrap();
    std::fs::write(d.join("site.css.zst"), &sibling).unwrap();
    let s = Server::start(&d, &["--compress=false"]);
    let r = s.get("/site.css", &[("Accept-Encoding", "gzip, zstd, br")]);
    assert_eq!(r.header("content-encoding"), Some("zstd"), "the only compressed variant there is");
    assert_eq!(r.body, sibling, "the sibling's bytes as they are");
    assert_eq!(unzstd(&r.body), css);
    assert_eq!(r.header("content-type"), Some("text/css; charset=utf-8"));
    let plain = s.get("/site.css", &[("Accept-Encoding", "br, gzip")]);
    assert_eq!((plain.header("content-encoding"), &plain.body), (None, &css));
    // The sibling stays a URL of its own.
    let own = s.get("/site.css.zst", &[]);
    assert_eq!((own.status, &own.body), (200, &sibling));
}

#[test]
fn precompress_writes_zst_and_the_server_serves_it_from_the_start() {
    let d = tempdir("zstd-precompress");
    let html = page(200);
    std::fs::write(d.join("index.html"), &html).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"))
        .args(["precompress", d.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success() && text.contains("1 files encoded") && text.contains("zstd "), "{text}");
    let zst = std::fs::read(d.join("index.html.zst")).expect("a .zst sibling");
    assert!(zst.len() < html.len());
    assert_eq!(unzstd(&zst), html);
    let s = Server::start(&d, &["--compress"]);
    assert_eq!(s.metric("hyperstatic_content_encodings_pending"), 0.0, "nothing left to encode");
    let r = s.get("/index.html", &[("Accept-Encoding", "zstd")]);
    assert_eq!((r.header("content-encoding"), &r.body), (Some("zstd"), &zst));
}

#[test]
fn the_compress_cache_keeps_zst_entries() {
    let d = tempdir("zstd-cache-site");
    let cache = tempdir("zstd-cache");
    std::fs::write(d.join("index.html"), page(250)).unwrap();
    let dir = cache.to_str().unwrap();
    {
        let s = Server::start(&d, &["--compress", "--compress-cache", dir]);
        s.wait_encoded();
    }
    let zst: Vec<_> = std::fs::read_dir(&*cache)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".zst"))
        .collect();
    assert_eq!(zst.len(), 1, "one .zst entry beside .br and .gz");
    assert_eq!(unzstd(&std::fs::read(zst[0].path()).unwrap()), page(250));
    let s = Server::start(&d, &["--compress", "--compress-cache", dir]);
    s.wait_encoded();
    assert_eq!(s.metric("hyperstatic_content_encodings_total{source=\"cache\"}"), 1.0);
    assert_eq!(s.metric("hyperstatic_content_encodings_total{source=\"computed\"}"), 0.0);
    let r = s.get("/index.html", &[("Accept-Encoding", "zstd")]);
    assert_eq!(unzstd(&r.body), page(250));
}
