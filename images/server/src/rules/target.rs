//! A matched rule's destination, built from its `to` template and the request path's captures without
//! allocating: written straight into the response (a redirect's Location) or into the worker's scratch buffer
//! (a rewrite's site path).

use super::matcher::Captures;
use super::parse::{Piece, Rule};

fn capture<'p>(piece: &Piece, path: &'p [u8], caps: &Captures) -> &'p [u8] {
    let (s, e) = match piece {
        Piece::Param(i) => caps.params[*i as usize],
        Piece::Splat => caps.splat,
        Piece::Lit(_) => unreachable!("literals are not captures"),
    };
    &path[s as usize..e as usize]
}

/// Bytes that go into a Location as they are (RFC 3986 unreserved, sub-delims, `:`, `@`, `/`). Captures come
/// from the decoded path, so anything else — a decoded CR or LF above all — is percent-encoded again.
pub(super) fn keep(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b)
}

fn encoded(put: &mut impl FnMut(&[u8]), bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut from = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !keep(b) {
            put(&bytes[from..i]);
            put(&[b'%', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
            from = i + 1;
        }
    }
    put(&bytes[from..]);
}

/// The Location value, in pieces to `put`: `to` with captures filled in (percent-encoded), then the request's
/// query string.
pub fn write_location(put: &mut impl FnMut(&[u8]), rule: &Rule, path: &[u8], caps: &Captures, query: Option<&[u8]>) {
    let mut has_query = false;
    for p in &rule.to {
        match p {
            Piece::Lit(l) => {
                has_query |= l.contains(&b'?');
                put(l);
            }
            _ => encoded(put, capture(p, path, caps)),
        }
    }
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        put(if has_query { b"&" } else { b"?" });
        put(q);
    }
}

/// A rewrite's site path in `buf`, or None when it does not fit or would hold a `.`/`..` segment. The result is
/// only ever looked up in the content table (the loaded site), so it cannot reach a file outside the root; the
/// segment check makes that explicit rather than incidental.
pub fn rewrite_path<'b>(rule: &Rule, path: &[u8], caps: &Captures, buf: &'b mut [u8]) -> Option<&'b [u8]> {
    let mut n = 0;
    for p in &rule.to {
        let part: &[u8] = match p {
            Piece::Lit(l) => l,
            _ => capture(p, path, caps),
        };
        buf.get_mut(n..n + part.len())?.copy_from_slice(part);
        n += part.len();
    }
    let r = &buf[..n];
    if r.split(|&b| b == b'/').any(|s| s == b"." || s == b"..") {
        return None;
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::super::matcher::Matcher;
    use super::super::parse::parse_rule;
    use super::*;

    fn run(rule: &str, path: &str, query: Option<&str>) -> (String, Option<String>) {
        let r = parse_rule(rule, "t").unwrap().unwrap();
        let mut m = Matcher::default();
        m.insert(0, &r.from);
        let mut caps = Captures::default();
        m.find(path.as_bytes(), &mut caps).expect("matches");
        let mut out = Vec::new();
        write_location(&mut |b: &[u8]| out.extend_from_slice(b), &r, path.as_bytes(), &caps, query.map(str::as_bytes));
        let mut buf = [0u8; 64];
        let rw = rewrite_path(&r, path.as_bytes(), &caps, &mut buf).map(|b| String::from_utf8_lossy(b).into_owned());
        (String::from_utf8(out).unwrap(), rw)
    }

    #[test]
    fn locations_fill_captures_and_keep_the_query() {
        assert_eq!(run("/blog/* /news/:splat", "/blog/a/b", Some("x=1")).0, "/news/a/b?x=1");
        assert_eq!(run("/:y/:s /p/:s-:y", "/2024/hi", None).0, "/p/hi-2024");
        assert_eq!(run("/a https://e.example/b?src=a", "/a", Some("q")).0, "https://e.example/b?src=a&q");
        assert_eq!(run("/a/* /b/:splat", "/a/x y\r\nSet-Cookie:1", None).0, "/b/x%20y%0D%0ASet-Cookie:1");
        assert_eq!(run("/a/* /b/:splat", "/a/caf\u{e9}", Some("")).0, "/b/caf%C3%A9");
    }

    #[test]
    fn rewrite_paths() {
        assert_eq!(run("/app/* /app/index.html 200", "/app/x", None).1.as_deref(), Some("/app/index.html"));
        assert_eq!(run("/u/:id /users/:id.html 200", "/u/7", None).1.as_deref(), Some("/users/7.html"));
        assert_eq!(run("/u/* /:splat 200", "/u/a/b", None).1.as_deref(), Some("/a/b"));
        assert_eq!(
            run("/u/:id /x/.:id 200", "/u/.", None).1,
            None,
            "normalised paths have no . segment, still checked"
        );
        assert_eq!(run("/u/* /y/..:splat 200", "/u", None).1, None, "an empty splat next to dots makes a .. segment");
        assert_eq!(run("/u/* /y/..:splat 200", "/u/a", None).1.as_deref(), Some("/y/..a"));
        let long = format!("/u/{}", "a".repeat(100));
        assert_eq!(run("/u/:id /x/:id 200", &long, None).1, None, "does not fit");
    }
}
