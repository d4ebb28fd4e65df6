//! Issue 38, item 1 where the server loads: a content tree is capped in entries (`--max-entries`) and depth
//! (`--max-depth`), whatever its bytes (empty files and directories cost none). Over a cap the load is refused
//! naming the limit and the path: on a live reload the previous content keeps serving, `--check` and a first load
//! fail. Real trees in a temporary directory, the real binary.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

fn empty_files(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..n {
        std::fs::write(dir.join(format!("f{i}")), "").unwrap();
    }
}

#[test]
fn a_reload_over_the_caps_is_refused_and_the_previous_content_keeps_serving() {
    let root = tempdir("tree-caps-reload");
    std::fs::write(root.join("index.html"), "v1").unwrap();
    let s = Server::start(&root, &["--max-entries", "50", "--max-depth", "3"]);
    // The walk names the paths it resolved.
    let canon = std::fs::canonicalize(&*root).unwrap();
    assert_eq!(s.get("/", &[]).text(), "v1");

    // 60 empty files: no bytes, too many entries. Made aside and renamed in, so the reload sees all 60 at once
    // (written one by one into the root, a reload between the 49th and the 50th would serve the first ones).
    let aside = tempdir("tree-caps-reload-aside");
    empty_files(&aside.join("many"), 60);
    std::fs::rename(aside.join("many"), root.join("many")).unwrap();
    wait_for("the refused reload", || s.metric("hyperstatic_content_load_failed") == 1.0);
    let e = s.admin_get("/load-error").text();
    assert!(e.contains("more than 50 entries (--max-entries)"), "{e}");
    assert!(e.contains(&canon.join("many").display().to_string()), "the path is named: {e}");
    assert_eq!(s.get("/", &[]).text(), "v1", "the previous content keeps serving");
    assert_eq!(s.get("/many/f0", &[]).status, 404, "nothing of the refused tree is served");

    // Four directories deep: within the entries, past the depth.
    std::fs::remove_dir_all(root.join("many")).unwrap();
    std::fs::create_dir_all(root.join("a/b/c/d")).unwrap();
    std::fs::write(root.join("a/b/c/d/deep.html"), "deep").unwrap();
    wait_for("the depth refusal", || s.admin_get("/load-error").text().contains("--max-depth"));
    let e = s.admin_get("/load-error").text();
    assert!(e.contains(&format!("{} is deeper than 3 directories", canon.join("a/b/c/d").display())), "{e}");
    assert_eq!(s.get("/a/b/c/d/deep.html", &[]).status, 404);
    assert_eq!(s.get("/", &[]).text(), "v1");

    // Back within both caps: the new tree is served.
    std::fs::remove_dir_all(root.join("a/b/c/d")).unwrap();
    std::fs::write(root.join("a/b/c/ok.html"), "three deep").unwrap();
    std::fs::write(root.join("index.html"), "v2").unwrap();
    wait_for("the fixed content", || s.get("/", &[]).text() == "v2");
    assert_eq!(s.get("/a/b/c/ok.html", &[]).text(), "three deep");
    assert_eq!(s.metric("hyperstatic_content_load_failed"), 0.0);
}

fn check(root: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"))
        .args(["--check", "--root", &root.display().to_string()])
        .args(extra)
        .env_clear()
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

#[test]
fn the_default_caps_refuse_a_tree_of_empty_files_and_directories() {
    // 101 directories of 1,000 empty files: 101,101 entries and no content byte, over the default 100,000.
    let root = tempdir("tree-caps-default");
    std::fs::write(root.join("index.html"), "home").unwrap();
    for d in 0..101 {
        empty_files(&root.join(format!("d{d}")), 1000);
    }
    let (code, text) = check(&root, &[]);
    assert_ne!(code, Some(0), "{text}");
    assert!(text.contains("more than 100000 entries (--max-entries)"), "{text}");
    // Raised by the flag, the same tree loads.
    let (code, text) = check(&root, &["--max-entries", "200000"]);
    assert_eq!(code, Some(0), "{text}");
    drop(root);

    // 65 nested directories, over the default depth of 64; 64 are fine.
    let root = tempdir("tree-caps-depth");
    let mut deep = root.to_path_buf();
    for _ in 0..64 {
        deep.push("d");
    }
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("x.html"), "x").unwrap();
    let (code, text) = check(&root, &[]);
    assert_eq!(code, Some(0), "{text}");
    std::fs::create_dir(deep.join("d")).unwrap();
    let (code, text) = check(&root, &[]);
    assert_ne!(code, Some(0), "{text}");
    assert!(text.contains("is deeper than 64 directories (--max-depth)"), "{text}");
}
