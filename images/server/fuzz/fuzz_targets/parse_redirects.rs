//! The `_redirects` parser never panics on any text, and what it accepts is what the server can apply safely:
//! statuses 200/301/302/307/308, a rewrite's target a site path without `.`/`..` segments; the compiled trie then
//! finds a rule for each rule's own source path (the first in file order whose pattern matches) without panicking.
#![no_main]

use hyperstatic_server::rules::{self, Captures, Matcher, Piece, Seg};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(parsed) = rules::parse_file(text, "_redirects") else { return };
    let mut m = Matcher::default();
    for (i, r) in parsed.iter().enumerate() {
        assert!([200, 301, 302, 307, 308].contains(&r.status), "{r:?}");
        if r.is_rewrite() {
            let Some(Piece::Lit(first)) = r.to.first() else { panic!("a rewrite starts with a literal /: {r:?}") };
            assert_eq!(first.first(), Some(&b'/'));
            // With captures filled in (a capture is a whole, non-dot segment of a normalised path; an empty splat is
            // refused at serve time by target.rs), the target has no `.`/`..` segment.
            let mut t = Vec::new();
            for p in &r.to {
                match p {
                    Piece::Lit(l) => t.extend_from_slice(l),
                    _ => t.push(b'x'),
                }
            }
            assert!(!t.split(|&b| b == b'/').any(|s| s == b".." || s == b"."), "{r:?}");
        }
        m.insert(i as u32, &r.from);
    }
    for r in &parsed {
        // The rule's own pattern with placeholders and the splat filled in matches some rule.
        let mut path = Vec::new();
        for s in &r.from {
            path.push(b'/');
            match s {
                Seg::Lit(l) => path.extend_from_slice(l),
                Seg::Param(_) => path.push(b'x'),
                Seg::Splat => path.extend_from_slice(b"a/b"),
            }
        }
        if path.is_empty() {
            path.push(b'/');
        }
        let mut caps = Captures::default();
        assert!(m.find(&path, &mut caps).is_some(), "{r:?} does not match {:?}", String::from_utf8_lossy(&path));
    }
});
