//! A Git content layout as the puller leaves it (internal/contentagent): `DIR/<commit>/` trees, `DIR/current` the
//! served one, and `DIR/deploys.json` listing the kept trees with when each stopped being served, for the skew
//! protection tests (tests/skew.rs, tests/h3.rs). Times are given relative to now and written well inside or
//! well outside the window, so no test races the clock.

use std::path::Path;
use std::process::Command;

/// A commit-like tree name: `n` repeated to 40 hex digits.
pub fn commit(n: char) -> String {
    std::iter::repeat_n(n, 40).collect()
}

/// Writes tree `name` under `dir` with `files` (path, body).
pub fn write_tree(dir: &Path, name: &str, files: &[(&str, &str)]) {
    for (f, body) in files {
        let p = dir.join(name).join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
}

/// Points `DIR/current` at `name` with a rename, as the puller flips it.
pub fn flip(dir: &Path, name: &str) {
    let tmp = dir.join(".current-new");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(name, &tmp).unwrap();
    std::fs::rename(&tmp, dir.join("current")).unwrap();
}

/// `date -u` of now plus `offset_s` in RFC 3339, as the puller writes times.
pub fn rfc3339_from_now(offset_s: i64) -> String {
    let out = Command::new("date")
        .args(["-u", "-d", &format!("{offset_s} seconds"), "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Writes `DIR/deploys.json` by a rename: (tree, served until, as seconds from now; None while served).
pub fn write_deploys(dir: &Path, deploys: &[(&str, Option<i64>)]) {
    let entries: Vec<String> = deploys
        .iter()
        .map(|(tree, until)| match until {
            Some(s) => format!(r#"{{"tree":"{tree}","commit":"{tree}","servedUntil":"{}"}}"#, rfc3339_from_now(*s)),
            None => format!(r#"{{"tree":"{tree}","commit":"{tree}"}}"#),
        })
        .collect();
    write_raw_deploys(dir, &format!(r#"{{"deploys":[{}]}}"#, entries.join(",")));
}

/// Writes `DIR/deploys.json` with these bytes, by a rename.
pub fn write_raw_deploys(dir: &Path, text: &str) {
    std::fs::write(dir.join(".deploys-new"), text).unwrap();
    std::fs::rename(dir.join(".deploys-new"), dir.join("deploys.json")).unwrap();
}
