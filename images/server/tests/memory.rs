//! The memory budget end to end: a site larger than its budget serves every file byte-exact, whether held in
//! memory or served from disk (full, HEAD, ranges, br/gzip siblings), the metrics add up, and inside a real
//! memory cgroup of half the site's size the server is never OOM-killed (while, as a control, the same server
//! told to ignore the limit is).

mod common;

use common::cgroup::{skip, MemCgroup};
use common::*;
use hyperstatic_server::site::memory;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// Deterministic pseudo-random bytes (incompressible).
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Pseudo-random hex text: compresses to about half.
fn hex_text(n: usize, seed: u64) -> Vec<u8> {
    noise(n, seed).iter().map(|b| b"0123456789abcdef"[(b & 15) as usize]).collect()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn brotli(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut w = brotli::CompressorWriter::new(&mut out, 4096, 4, 20);
        w.write_all(data).unwrap();
    }
    out
}

/// Every file of a test site by URL path.
type Files = HashMap<String, Vec<u8>>;

fn write(root: &Path, files: &mut Files, url: &str, bytes: Vec<u8>) {
    let p = root.join(url.trim_start_matches('/'));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, &bytes).unwrap();
    files.insert(url.to_string(), bytes);
}

/// About 15 MB in 40 files from 300 bytes to 1 MB; every third one is text with real `.br` and `.gz` siblings.
fn budget_site(name: &str) -> (Site, Files) {
    let site = tempdir(name);
    let mut files = Files::new();
    for i in 0..40u64 {
        let n = 300 + (i * i * 700) as usize;
        if i % 3 == 0 {
            let url = format!("/text/t{i:02}.css");
            let text = hex_text(n, i);
            write(&site, &mut files, &format!("{url}.gz"), gzip(&text));
            write(&site, &mut files, &format!("{url}.br"), brotli(&text));
            write(&site, &mut files, &url, text);
        } else {
            write(&site, &mut files, &format!("/bin/b{i:02}.bin"), noise(n, i));
        }
    }
    (site, files)
}

/// The /content list: URL path → (served from disk, encodings).
fn listing(s: &Server) -> HashMap<String, (bool, String)> {
    // The listing and the responses checked against it must see the same table: the encoder's last swap first.
    s.wait_encoded();
    let text = s.admin_get("/content").text();
    text.lines()
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert_eq!(cols.len(), 3, "{l:?}");
            assert!(cols[1] == "memory" || cols[1] == "disk", "{l:?}");
            (cols[0].to_string(), (cols[1] == "disk", cols[2].to_string()))
        })
        .collect()
}

fn head(s: &Server, path: &str, headers: &[(&str, &str)]) -> Response {
    let mut req = format!("HEAD {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let bytes = s.raw(req.as_bytes());
    let (mut rs, used) = parse_responses(&bytes, true);
    assert_eq!((rs.len(), used), (1, bytes.len()), "HEAD {path}: one response without a body");
    rs.remove(0)
}

fn decode(enc: &str, body: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    match enc {
        "gzip" => flate2::read::GzDecoder::new(body).read_to_end(&mut out).unwrap(),
        "br" => brotli::Decompressor::new(body, 4096).read_to_end(&mut out).unwrap(),
        _ => panic!("{enc}"),
    };
    out
}

/// Fetches every file of `files` every way a client can and compares with the bytes on disk.
fn check_every_file(s: &Server, files: &Files, listed: &HashMap<String, (bool, String)>) {
    for (url, want) in files {
        let (disk, encodings) = &listed[url];
        let what = format!("{url} ({})", if *disk { "disk" } else { "memory" });
        let r = s.get(url, &[]);
        assert_eq!(r.status, 200, "{what}");
        assert_eq!(r.header("Content-Encoding"), None, "{what}");
        assert!(r.body == *want, "{what}: body differs");
        let h = head(s, url, &[]);
        assert_eq!(h.status, 200, "{what}");
        assert_eq!(h.header("Content-Length"), Some(want.len().to_string().as_str()), "HEAD {what}");
        // Ranges: a middle slice and a suffix.
        let (a, b) = (want.len() / 3, want.len() / 3 + want.len() / 4);
        let r = s.get(url, &[("Range", &format!("bytes={a}-{b}"))]);
        assert_eq!(r.status, 206, "{what}");
        assert!(r.body == want[a..=b], "{what}: range {a}-{b} differs");
        let r = s.get(url, &[("Range", "bytes=-100")]);
        assert!(r.status == 206 && r.body == want[want.len() - 100.min(want.len())..], "{what}: suffix range");
        // Each encoding: a sibling is sent as it is on disk; a load-time variant decodes to the file.
        for (enc, ext) in [("br", "br"), ("gzip", "gz")] {
            let r = s.get(url, &[("Accept-Encoding", enc)]);
            assert_eq!(r.status, 200);
            let sibling = files.get(&format!("{url}.{ext}"));
            if sibling.is_some() {
                assert!(encodings.contains(enc), "{what} lists its {enc} sibling: {encodings}");
            }
            if r.header("Content-Encoding") == Some(enc) {
                assert!(encodings.contains(enc), "{what}: {encodings}");
                match sibling {
                    Some(sib) => assert!(r.body == *sib, "{what}: {enc} sibling differs"),
                    None => assert!(decode(enc, &r.body) == *want, "{what}: {enc} variant does not decode"),
                }
                let h = head(s, url, &[("Accept-Encoding", enc)]);
                assert_eq!(h.header("Content-Length"), Some(r.body.len().to_string().as_str()), "HEAD {enc} {what}");
                let n = r.body.len();
                let r2 = s.get(url, &[("Accept-Encoding", enc), ("Range", &format!("bytes=1-{}", n / 2))]);
                assert!(r2.status == 206 && r2.body == r.body[1..=n / 2], "{what}: range of the {enc} variant");
            } else {
                assert!(sibling.is_none(), "{what}: its {enc} sibling is not served");
                assert!(r.body == *want);
            }
        }
    }
}

/// `x.br` or `x.gz` beside an `x`: served as a URL of its own, held once as `x`'s variant.
fn is_sibling(files: &Files, url: &str) -> bool {
    url.strip_suffix(".br").or_else(|| url.strip_suffix(".gz")).is_some_and(|base| files.contains_key(base))
}

/// What the planner charges for a file: its bytes and its siblings' (a sibling itself costs nothing, and is held
/// where its file is).
fn cost(files: &Files, url: &str) -> u64 {
    if is_sibling(files, url) {
        return 0;
    }
    let sib = |ext: &str| files.get(&format!("{url}.{ext}")).map_or(0, |b| b.len() as u64);
    files[url].len() as u64 + sib("br") + sib("gz")
}

fn content_bytes(files: &Files) -> u64 {
    files.values().map(|b| b.len() as u64).sum()
}

#[test]
fn a_site_twice_its_budget_serves_every_file_byte_exact() {
    let (site, files) = budget_site("mem-half");
    let total = content_bytes(&files);
    let budget = total / 2;
    let s = Server::start(&site, &["--memory-limit", "64Mi", "--memory-budget", &budget.to_string()]);
    let listed = listing(&s);
    assert_eq!(listed.len(), files.len());
    let disk: Vec<&String> = listed.iter().filter(|(_, (d, _))| *d).map(|(u, _)| u).collect();
    let mem: Vec<&String> = listed.iter().filter(|(_, (d, _))| !*d).map(|(u, _)| u).collect();
    assert!(disk.len() >= 5 && mem.len() >= 20, "{} on disk, {} in memory", disk.len(), mem.len());
    assert!(
        disk.iter().any(|u| files.contains_key(&format!("{u}.br"))),
        "some disk-served file has siblings: {disk:?}"
    );
    // Smallest first: every file held in memory costs no more than any file on disk.
    let costs = |urls: &[&String]| -> Vec<u64> {
        urls.iter().filter(|u| !is_sibling(&files, u)).map(|u| cost(&files, u)).collect()
    };
    let max_mem = costs(&mem).into_iter().max().unwrap();
    let min_disk = costs(&disk).into_iter().min().unwrap();
    assert!(max_mem <= min_disk, "{max_mem} in memory, {min_disk} on disk");
    // A sibling is where its file is.
    for (url, (on_disk, _)) in &listed {
        if is_sibling(&files, url) {
            let base = &url[..url.len() - 3];
            assert_eq!(*on_disk, listed[base].0, "{url} is not where {base} is");
        }
    }

    check_every_file(&s, &files, &listed);

    // The metrics add up: identity bytes in memory + on disk = content; memory within the budget.
    let disk_bytes: u64 = disk.iter().map(|u| files[*u].len() as u64).sum();
    let mem_identity: u64 = mem.iter().map(|u| files[*u].len() as u64).sum();
    assert_eq!(s.metric("hyperstatic_content_files"), files.len() as f64);
    assert_eq!(s.metric("hyperstatic_content_bytes"), total as f64);
    assert_eq!(s.metric("hyperstatic_content_disk_bytes"), disk_bytes as f64);
    assert_eq!(mem_identity + disk_bytes, total);
    let in_memory = s.metric("hyperstatic_content_memory_bytes");
    assert!(in_memory >= mem_identity as f64 && in_memory <= budget as f64, "{in_memory} > {budget}");
    assert_eq!(s.metric("hyperstatic_memory_limit_bytes"), (64u64 << 20) as f64);
    assert_eq!(s.metric("hyperstatic_content_memory_budget_bytes"), budget as f64);
    let all: u64 = files.keys().map(|u| cost(&files, u)).sum();
    // The fit limit holds the content and the table (charged first: these few dozen entries are well under 1 MiB).
    let fit = s.metric("hyperstatic_content_fit_memory_limit_bytes") as u64;
    assert!(fit >= memory::fit_limit(all) && fit <= memory::fit_limit(all + (1 << 20)), "{fit}");
    assert!(fit > 2 * all, "the fit limit leaves room for a reload's two tables");
    let table = s.metric("hyperstatic_content_table_bytes");
    assert!(table > 0.0 && in_memory + table <= budget as f64, "{table} + {in_memory} > {budget}");
    // One log line says so, with the bytes on disk and the fit limit.
    let logs = s.logs.lock().unwrap().clone();
    let line = logs.iter().find(|l| l.contains("does not fit its memory budget")).expect("a does-not-fit log line");
    assert!(line.contains(&format!("\"disk_bytes\":{disk_bytes},")), "{line}");
    assert!(line.contains(&format!("\"fit_memory_limit_bytes\":{fit}")), "{line}");
    assert!(line.contains("\"level\":\"warn\""), "{line}");
}

#[test]
fn a_zero_budget_serves_everything_from_disk_and_a_big_one_from_memory() {
    let (site, files) = budget_site("mem-zero");
    let s = Server::start(&site, &["--memory-budget", "0"]);
    let listed = listing(&s);
    assert!(listed.values().all(|(disk, _)| *disk), "every file on disk");
    check_every_file(&s, &files, &listed);
    assert_eq!(s.metric("hyperstatic_content_memory_bytes"), 0.0);
    assert_eq!(s.metric("hyperstatic_content_disk_bytes"), content_bytes(&files) as f64);
    drop(s);

    // With room for everything, nothing is on disk and nothing is logged.
    let s = Server::start(&site, &["--memory-limit", "1Gi", "--compress=false"]);
    let listed = listing(&s);
    assert!(listed.values().all(|(disk, _)| !*disk), "every file in memory");
    assert_eq!(s.metric("hyperstatic_content_disk_bytes"), 0.0);
    assert_eq!(s.metric("hyperstatic_content_memory_budget_bytes"), memory::auto_budget(1 << 30) as f64);
    let all: u64 = files.keys().map(|u| cost(&files, u)).sum();
    assert_eq!(
        s.metric("hyperstatic_content_memory_bytes"),
        all as f64,
        "identity + siblings (held once), no load-time variants"
    );
    assert!(!s.log_contains("does not fit"));
    check_every_file(&s, &files, &listed);
}

#[test]
fn the_automatic_budget_follows_the_limit() {
    let (site, files) = budget_site("mem-auto");
    let limit: u64 = 20 << 20;
    let s = Server::start(&site, &["--memory-limit", "20Mi"]);
    let budget = memory::auto_budget(limit);
    assert_eq!(s.metric("hyperstatic_memory_limit_bytes"), limit as f64);
    assert_eq!(s.metric("hyperstatic_content_memory_budget_bytes"), budget as f64);
    assert!(s.metric("hyperstatic_content_memory_bytes") <= budget as f64);
    assert!(s.metric("hyperstatic_content_disk_bytes") > 0.0);
    // A reload plans again under the same rule.
    s.signal(libc::SIGHUP);
    let deadline = Instant::now() + Duration::from_secs(20);
    while s.metric("hyperstatic_reloads_total{result=\"success\"}") < 2.0 {
        assert!(Instant::now() < deadline, "no reload");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(s.metric("hyperstatic_content_memory_bytes") <= budget as f64);
    let listed = listing(&s);
    check_every_file(&s, &files, &listed);
}

// ---- A real memory cgroup (common/cgroup.rs) ----

/// Writes the files out of the page cache, so the server's own reads are charged to its cgroup.
fn evict_from_page_cache(root: &Path) {
    fn walk(d: &Path) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p);
            } else {
                use std::os::fd::AsRawFd;
                let f = std::fs::File::open(&p).unwrap();
                f.sync_all().unwrap();
                // SAFETY: advice on our own open file.
                unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            }
        }
    }
    walk(root);
}

/// 60 MB: 1,000 files of 4 KiB and 40 of 1.4 MB. (With 2,000 small files the table alone, about 4.5 KB a file
/// served from disk, would pass this limit's 5 MiB budget: every file would be served from disk.)
fn cgroup_site() -> (Site, Files) {
    let site = tempdir("mem-cgroup");
    let mut files = Files::new();
    for i in 0..1000u64 {
        write(&site, &mut files, &format!("/small/{i:04}.bin"), noise(4096, i));
    }
    for i in 0..40u64 {
        write(&site, &mut files, &format!("/large/{i:02}.bin"), noise(1_400_000, 10_000 + i));
    }
    evict_from_page_cache(&site);
    (site, files)
}

#[test]
fn in_a_memory_cgroup_of_half_the_site_the_server_is_never_oom_killed() {
    const TEST: &str = "in_a_memory_cgroup_of_half_the_site_the_server_is_never_oom_killed";
    let (site, files) = cgroup_site();
    let total = content_bytes(&files);
    let limit = total / 2 / 4096 * 4096; // the kernel keeps whole pages
    let (control, group) = match (
        MemCgroup::create("hyperstatic-memtest-control", limit),
        MemCgroup::create("hyperstatic-memtest", limit),
    ) {
        (Ok(c), Ok(g)) => (c, g),
        (Err(why), _) | (_, Err(why)) => return skip(TEST, &why),
    };

    // Control: the same server told to ignore the limit (holding all 60 MB) is OOM-killed, so the group bites.
    {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"));
        cmd.args(["--root", site.to_str().unwrap(), "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"])
            .args(["--workers", "1", "--memory-limit", "none", "--compress=false"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        control.join(&mut cmd);
        let mut child = cmd.spawn().expect("start the control server");
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break Some(st);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.and_then(|s| s.signal()),
            Some(libc::SIGKILL),
            "without its budget the server must not survive a {limit}-byte cgroup holding {total} bytes"
        );
        assert!(control.oom_kills() >= 1, "the control was killed by the OOM killer");
    }

    // The server reads the limit from its cgroup by itself (no --memory-limit).
    let s = Server::start_with(&site, &[], &mut |cmd| group.join(cmd));
    assert_eq!(s.metric("hyperstatic_memory_limit_bytes"), limit as f64, "the cgroup's limit is read");
    assert_eq!(s.metric("hyperstatic_content_memory_budget_bytes"), memory::auto_budget(limit) as f64);
    let listed = listing(&s);
    assert!(listed.values().any(|(disk, _)| *disk) && listed.values().any(|(disk, _)| !*disk));
    for (url, want) in &files {
        let r = s.get(url, &[]);
        assert!(r.status == 200 && r.body == *want, "{url} differs");
    }
    // A reload holds two tables at once for a moment.
    s.signal(libc::SIGHUP);
    let deadline = Instant::now() + Duration::from_secs(30);
    while s.metric("hyperstatic_reloads_total{result=\"success\"}") < 2.0 {
        assert!(Instant::now() < deadline, "no reload");
        std::thread::sleep(Duration::from_millis(50));
    }
    for url in files.keys().filter(|u| u.starts_with("/large/")) {
        assert!(s.get(url, &[]).body == files[url], "{url} differs after the reload");
    }
    let rss = s.metric("process_resident_memory_bytes");
    let peak = group.peak();
    let mut s = s;
    assert!(s.child.try_wait().unwrap().is_none(), "the server is alive");
    assert_eq!(group.oom_kills(), 0, "no OOM kill while serving");
    let _ = std::io::stderr().write_all(
        format!(
            "cgroup {} limit {limit} (site {total} bytes): server RSS {rss}, group peak {peak}, budget {}\n",
            group.dir.display(),
            memory::auto_budget(limit)
        )
        .as_bytes(),
    );
    drop(s);
}
