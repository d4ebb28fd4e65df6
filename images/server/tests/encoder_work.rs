//! The background encoder's working memory against its charge (issue 38 item 11): `codec::encoder_work(n)` bounds
//! the peak resident memory the three codecs add for a file of n bytes, measured on the real binary: `precompress`
//! on that one file, its peak RSS from `wait4` less that of a run that encodes nothing (zstd allocates in C, so only
//! the process's own peak sees all of it), plus the copy into `Arc`s the server makes. A test binary of its own: a
//! child's peak RSS starts at its parent's (it is forked from it), so the parent must stay small and the same for
//! every run.

mod common;

use std::path::Path;

use hyperstatic_server::compress::codec;

/// Peak RSS in KiB of `precompress DIR` over a directory holding one file.
#[allow(clippy::zombie_processes)] // reaped by wait4, which also returns its resource usage
fn precompress_peak_kib(dir: &Path) -> u64 {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"))
        .arg("precompress")
        .arg("--force")
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("run precompress");
    let mut status = 0;
    // SAFETY: plain structs for wait4 to fill, for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "precompress failed: {status}");
    usage.ru_maxrss as u64
}

#[test]
fn the_encoders_work_is_bounded_by_its_charge() {
    let dir = common::tempdir("footprint-encoder");
    std::fs::write(dir.join("tiny.html"), b"too small to encode").unwrap();
    let base = precompress_peak_kib(&dir);
    std::fs::remove_file(dir.join("tiny.html")).unwrap();
    let mut over = Vec::new();
    for n in [1024, 20_000, 65_536, 100_000, 200_000, 256 * 1024, 300_000, 1 << 20, 2 << 20, 4 << 20, 8 << 20] {
        let file = dir.join("page.html");
        std::fs::write(&file, common::words(n, n as u64)).unwrap();
        let peak = precompress_peak_kib(&dir).saturating_sub(base) * 1024;
        // The server's encoder also copies the outputs into Arcs (each kept one is smaller than the file).
        let used = peak + n as u64;
        let charged = codec::encoder_work(n as u64);
        eprintln!(
            "encoder, {n} B: peak {peak} B above a run that encodes nothing (+{n} for the copies); charged {charged}"
        );
        if used > charged {
            over.push(format!("{n} B: the encoder used {used} B, charged {charged} B"));
        }
        for ext in ["", ".br", ".gz", ".zst"] {
            let _ = std::fs::remove_file(dir.join(format!("page.html{ext}")));
        }
    }
    assert!(over.is_empty(), "{over:#?}");
}
