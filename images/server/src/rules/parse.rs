//! One redirect rule from its text: a line of a Netlify / Cloudflare Pages `_redirects` file, or one
//! `--redirect` flag (the same syntax). The common subset is supported and everything else is refused with a
//! message saying what is not supported, so a migrated site fails loudly instead of redirecting differently:
//!
//! ```text
//! # comment
//! /old            /new                 # 301 by default (Netlify's default)
//! /blog/*         /news/:splat   302
//! /:year/:slug    /posts/:year/:slug
//! /app/*          /app/index.html 200  # a rewrite: another file's bytes under the same URL
//! /docs/*         /handbook/:splat 301!  # `!`: applies even where a file exists
//! ```

use crate::answer::path;

/// At most this many `:placeholders` in one `from`.
pub const MAX_PARAMS: usize = 8;
/// Longest rule text accepted (`from` and `to` are both request paths: the request line limit bounds them).
const MAX_RULE_LEN: usize = 4096;

/// One segment of a `from` pattern, matched against a decoded, normalised request path.
#[derive(Debug, Clone, PartialEq)]
pub enum Seg {
    Lit(Box<[u8]>),
    /// `:name`: any one segment; the number is its capture slot (order of appearance).
    Param(u8),
    /// `*`, last segment only: the rest of the path, possibly empty.
    Splat,
}

/// One piece of a `to` template.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Lit(Box<[u8]>),
    Param(u8),
    Splat,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub from: Vec<Seg>,
    pub to: Vec<Piece>,
    /// 200 (rewrite), 301, 302, 307 or 308.
    pub status: u16,
    /// `!`: applies even when a file matches the path (shadowing off).
    pub force: bool,
    /// Where it was written, for messages: `_redirects:12`, `--redirect`.
    pub origin: String,
    /// The rule as written (trimmed).
    pub text: String,
}

impl Rule {
    pub fn is_rewrite(&self) -> bool {
        self.status == 200
    }
}

/// Parses one line. `Ok(None)` for blank lines and comments. Errors say what is wrong, not where: the caller
/// prefixes the origin (file and line, or flag).
pub fn parse_rule(line: &str, origin: &str) -> Result<Option<Rule>, String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    if line.len() > MAX_RULE_LEN {
        return Err(format!("rule longer than {MAX_RULE_LEN} bytes"));
    }
    // A `#` token starts a trailing comment.
    let tokens: Vec<&str> = line.split_whitespace().take_while(|t| !t.starts_with('#')).collect();
    let (from_text, rest) = tokens.split_first().expect("a non-empty line has a token");
    if from_text.starts_with("http://") || from_text.starts_with("https://") || from_text.starts_with("//") {
        return Err(format!("{from_text}: domain-level redirects (from with a host) are not supported"));
    }
    if !from_text.starts_with('/') {
        return Err(format!("{from_text}: from must be a path starting with /"));
    }
    if let Some(q) = rest.first().filter(|t| !t.starts_with('/') && !t.contains("://") && t.contains('=')) {
        return Err(format!("{q}: query-parameter matching is not supported"));
    }
    if from_text.contains('?') {
        return Err(format!("{from_text}: query-parameter matching is not supported"));
    }
    let (to_text, rest) = rest.split_first().ok_or("expected FROM TO [STATUS]: no TO")?;
    let (status, force, rest) = match rest.split_first() {
        Some((s, rest)) if s.as_bytes()[0].is_ascii_digit() => {
            let (digits, force) = match s.strip_suffix('!') {
                Some(d) => (d, true),
                None => (*s, false),
            };
            let status: u16 = digits.parse().map_err(|_| format!("{s}: invalid status"))?;
            (status, force, rest)
        }
        _ => (301, false, rest),
    };
    if let Some(extra) = rest.first() {
        let key = extra.split('=').next().unwrap_or(extra);
        return Err(match key.to_ascii_lowercase().as_str() {
            "country" | "language" | "role" | "cookie" => {
                format!("{extra}: conditions ({key}=) are not supported")
            }
            _ => format!("{extra}: unexpected text after the status"),
        });
    }
    match status {
        200 | 301 | 302 | 307 | 308 => {}
        404 => return Err("status 404 is not supported here: use an error page (--error-page)".into()),
        _ => return Err(format!("status {status} is not supported (use 200, 301, 302, 307 or 308)")),
    }
    let (from, names) = parse_from(from_text)?;
    let to = parse_to(to_text, &names, from.last() == Some(&Seg::Splat), status)?;
    Ok(Some(Rule { from, to, status, force, origin: origin.to_string(), text: line.to_string() }))
}

/// The `from` pattern, decoded and normalised like a request path, and its placeholder names in slot order.
fn parse_from(text: &str) -> Result<(Vec<Seg>, Vec<String>), String> {
    let mut buf = vec![0u8; text.len() + 1];
    let n = path::normalize(text.as_bytes(), &mut buf).map_err(|_| format!("{text}: invalid path"))?;
    let norm = std::str::from_utf8(&buf[..n]).map_err(|_| format!("{text}: invalid path"))?;
    let parts: Vec<&str> = norm.split('/').filter(|s| !s.is_empty()).collect();
    let mut segs = Vec::with_capacity(parts.len());
    let mut names: Vec<String> = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        if *p == "*" {
            if i + 1 != parts.len() {
                return Err(format!("{text}: a splat (*) must be the last segment"));
            }
            segs.push(Seg::Splat);
        } else if let Some(name) = p.strip_prefix(':') {
            if !is_name(name) {
                return Err(format!("{text}: invalid placeholder :{name}"));
            }
            if names.len() == MAX_PARAMS {
                return Err(format!("{text}: more than {MAX_PARAMS} placeholders"));
            }
            segs.push(Seg::Param(names.len() as u8));
            names.push(name.to_string());
        } else if p.contains('*') {
            return Err(format!("{text}: a splat (*) must be a whole segment"));
        } else {
            segs.push(Seg::Lit(p.as_bytes().into()));
        }
    }
    Ok((segs, names))
}

fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// The `to` template. A redirect may go to a path or an absolute http(s) URL; a rewrite (200) only to a path in
/// the site, without `.`/`..` segments and without a query (it is looked up in the site's own table).
fn parse_to(text: &str, names: &[String], has_splat: bool, status: u16) -> Result<Vec<Piece>, String> {
    let external = text.starts_with("http://") || text.starts_with("https://");
    if !external && !text.starts_with('/') {
        return Err(format!("{text}: to must be a path starting with / or an http(s) URL"));
    }
    if text.starts_with("//") {
        return Err(format!("{text}: to must not start with // (a host-relative URL leaves the site)"));
    }
    if !text.bytes().all(|b| (0x21..0x7f).contains(&b)) {
        return Err(format!("{text}: to must be printable ASCII (percent-encode the rest)"));
    }
    if status == 200 {
        if external {
            return Err(format!(
                "{text}: a 200 rewrite to a URL (proxying) is not supported; rewrite to a file in the site"
            ));
        }
        if text.contains('?') || text.contains('#') || text.contains('%') {
            return Err(format!("{text}: a rewrite target is a plain site path (no query, fragment or escapes)"));
        }
        if text.split('/').any(|s| s == "." || s == "..") {
            return Err(format!("{text}: a rewrite target must stay inside the site (no . or .. segments)"));
        }
    }
    let b = text.as_bytes();
    let mut pieces = Vec::new();
    let mut lit_start = 0;
    let mut i = 0;
    while i < b.len() {
        let name_len = if b[i] == b':' {
            b[i + 1..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count()
        } else {
            0
        };
        // `:8080` in a URL is a port, not a placeholder: names start with a letter or `_`.
        if name_len == 0 || b[i + 1].is_ascii_digit() {
            i += 1;
            continue;
        }
        // A name from does not define stays literal text (`:8080`-like words in a URL); a name used twice in
        // from takes its first segment.
        let name = &text[i + 1..i + 1 + name_len];
        let piece = match names.iter().position(|n| n == name) {
            _ if name == "splat" && has_splat => Piece::Splat,
            Some(k) => Piece::Param(k as u8),
            None => {
                i += 1 + name_len;
                continue;
            }
        };
        if lit_start < i {
            pieces.push(Piece::Lit(b[lit_start..i].into()));
        }
        pieces.push(piece);
        i += 1 + name_len;
        lit_start = i;
    }
    if lit_start < b.len() {
        pieces.push(Piece::Lit(b[lit_start..].into()));
    }
    Ok(pieces)
}

/// A whole `_redirects` file: every rule in order, or the first error as `_redirects:LINE: message`.
pub fn parse_file(text: &str, name: &str) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let origin = format!("{name}:{}", i + 1);
        match parse_rule(line, &origin) {
            Ok(Some(r)) => rules.push(r),
            Ok(None) => {}
            Err(e) => return Err(format!("{origin}: {e}")),
        }
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(s: &str) -> Rule {
        parse_rule(s, "t").unwrap().unwrap()
    }

    fn err(s: &str) -> String {
        parse_rule(s, "t").unwrap_err()
    }

    #[test]
    fn the_common_subset() {
        let r = rule("/old /new");
        assert_eq!((r.status, r.force), (301, false));
        assert_eq!(r.from, vec![Seg::Lit((*b"old").into())]);
        let r = rule("/blog/*  /news/:splat  302");
        assert_eq!(r.from, vec![Seg::Lit((*b"blog").into()), Seg::Splat]);
        assert_eq!(r.to, vec![Piece::Lit((*b"/news/").into()), Piece::Splat]);
        assert_eq!(r.status, 302);
        let r = rule("/:year/:slug /posts/:slug-:year 308!  # moved");
        assert_eq!(r.from, vec![Seg::Param(0), Seg::Param(1)]);
        assert_eq!(
            r.to,
            vec![Piece::Lit((*b"/posts/").into()), Piece::Param(1), Piece::Lit((*b"-").into()), Piece::Param(0)]
        );
        assert!(r.force);
        assert!(rule("/app/* /index.html 200").is_rewrite());
        assert_eq!(
            rule("/x https://example.com:8443/y 307").to,
            vec![Piece::Lit((*b"https://example.com:8443/y").into())]
        );
        assert_eq!(rule("/caf%C3%A9/ /c").from, vec![Seg::Lit("café".as_bytes().into())]);
        // Names from does not define are text; a name defined twice is its first segment.
        assert_eq!(rule("/a /:b/:splat").to, vec![Piece::Lit((*b"/:b/:splat").into())]);
        assert_eq!(rule("/:a/:a /:a").to, vec![Piece::Lit((*b"/").into()), Piece::Param(0)]);
        assert_eq!(rule("/:splat/* /:splat").to, vec![Piece::Lit((*b"/").into()), Piece::Splat]);
        assert_eq!(parse_rule("  # comment", "t"), Ok(None));
        assert_eq!(parse_rule("   ", "t"), Ok(None));
    }

    #[test]
    fn the_rest_is_refused_with_a_reason() {
        assert!(err("/a /b 302 Country=us").contains("conditions (Country=) are not supported"));
        assert!(err("/a /b 200 Language=en").contains("not supported"));
        assert!(err("/store id=:id /blog/:id 301").contains("query-parameter matching"));
        assert!(err("https://old.example/* https://new.example/:splat").contains("domain-level"));
        assert!(err("/a").contains("no TO"));
        assert!(err("/a /b 303").contains("status 303 is not supported"));
        assert!(err("/a /b 404").contains("error page"));
        assert!(err("a /b").contains("starting with /"));
        assert!(err("/a b").contains("starting with /"));
        assert!(err("/a //evil.example/").contains("//"));
        assert!(err("/a/*/b /c").contains("last segment"));
        assert!(err("/a* /c").contains("whole segment"));
        assert!(err("/:1 /c").contains("invalid placeholder"));
        let many = format!("{} /x", "/:a".repeat(MAX_PARAMS + 1));
        assert!(err(&many).contains("more than 8 placeholders"));
        assert!(err("/a /b 30x").contains("invalid status"));
        assert!(err("/a /b 301 extra").contains("unexpected"));
        assert!(err("/a https://x.example/ 200").contains("proxying"));
        assert!(err("/a/* /../etc/passwd 200").contains("inside the site"));
        assert!(err("/a/* /x/../../etc 200").contains("inside the site"));
        assert!(err("/a /b?x=1 200").contains("plain site path"));
        assert!(err("/../a /b").contains("invalid path"));
    }

    #[test]
    fn files_name_the_line() {
        let rules = parse_file("# header\n/a /b\n\n/c/* /d/:splat 302\n", "_redirects").unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[1].origin, "_redirects:4");
        let e = parse_file("/a /b\n/c /d 302 Country=us\n", "_redirects").unwrap_err();
        assert!(e.starts_with("_redirects:2: "), "{e}");
    }
}
