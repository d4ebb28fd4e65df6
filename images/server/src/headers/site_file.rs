//! The site's own `_headers` file (at the content root), in the format Netlify and Cloudflare Pages define: a
//! block per URL pattern, an unindented pattern line followed by indented `Name: value` lines.
//!
//! ```text
//! # comment
//! /fonts/*
//!   Access-Control-Allow-Origin: *
//! /blog/:year/:slug
//!   X-Post: :year-:slug
//!   ! X-Robots-Tag
//! ```
//!
//! Patterns: `*` (one per pattern) is a splat matching any characters, `/` included; `:name` is a placeholder
//! matching one path segment (no `/`). Values may use `:splat` and the pattern's placeholders. A path matching
//! several blocks gets the headers of them all, in file order; the same header from two blocks has its values
//! joined with `, `; `! Name` removes a header an earlier block gave. Anything else — absolute URLs with a host,
//! a header line before any pattern, a malformed name, headers that frame the response (Content-Length, ...) —
//! is a load error naming the line, so a reload with a bad file keeps the previous content serving.
//!
//! Parsed and matched at load time only: each file's headers end up in its precomputed header block.

/// The file's name at the content root; it is never served.
pub const NAME: &str = "_headers";

/// Headers the server owns: setting them from a rule would break framing, negotiation or validators (and the
/// connection-specific ones make an HTTP/2 response malformed, RFC 9113 §8.2.2).
const RESERVED: [&str; 14] = [
    "content-length",
    "transfer-encoding",
    "connection",
    "proxy-connection",
    "keep-alive",
    "upgrade",
    "trailer",
    "te",
    "date",
    "content-encoding",
    "content-range",
    "etag",
    "last-modified",
    "accept-ranges",
];

/// Whether a rule may set this header (case-insensitive). Shared with `--header`'s checks.
pub fn reserved(name: &str) -> bool {
    RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name))
}

/// An RFC 9110 token (a header name).
pub fn is_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Lit(String),
    Splat,
    Placeholder(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Line {
    Set(String, String),
    Detach(String),
}

#[derive(Debug, Clone, PartialEq)]
struct Block {
    pattern: Vec<Piece>,
    lines: Vec<Line>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct HeadersFile {
    blocks: Vec<Block>,
}

/// The splat's and placeholders' values for one match.
type Captures = Vec<(String, String)>;

impl HeadersFile {
    /// Parses the file's text; errors read `_headers:LINE: what`.
    pub fn parse(text: &str) -> Result<HeadersFile, String> {
        let mut blocks: Vec<Block> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let err = |what: String| format!("{NAME}:{n}: {what}");
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let indented = raw.starts_with([' ', '\t']);
            if !indented {
                blocks.push(Block { pattern: pattern(line).map_err(err)?, lines: Vec::new() });
                continue;
            }
            let Some(block) = blocks.last_mut() else {
                return Err(err("a header line before any URL pattern".into()));
            };
            if let Some(name) = line.strip_prefix('!') {
                let name = name.trim();
                if !is_token(name) {
                    return Err(err(format!("invalid header name {name:?} to detach")));
                }
                block.lines.push(Line::Detach(name.to_string()));
                continue;
            }
            let Some((name, value)) = line.split_once(':') else {
                return Err(err(format!("expected 'Name: value', got {line:?}")));
            };
            let (name, value) = (name.trim(), value.trim());
            if !is_token(name) {
                return Err(err(format!("invalid header name {name:?}")));
            }
            if reserved(name) {
                return Err(err(format!("{name} is set by the server and cannot be set here")));
            }
            if value.bytes().any(|b| b < 0x20 && b != b'\t' || b == 0x7f) {
                return Err(err(format!("control character in the value of {name}")));
            }
            block.lines.push(Line::Set(name.to_string(), value.to_string()));
        }
        Ok(HeadersFile { blocks })
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The headers for a file reachable at `urls` (its path, and `/dir/` for a `/dir/index.html`): every block
    /// matching any of them, merged in file order. Names keep the case of their first appearance.
    pub fn headers_for(&self, urls: &[&str]) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for b in &self.blocks {
            let Some(caps) = urls.iter().find_map(|u| matches(&b.pattern, u)) else { continue };
            for l in &b.lines {
                match l {
                    Line::Set(name, value) => {
                        let value = substitute(value, &caps);
                        match out.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
                            Some((_, v)) => {
                                v.push_str(", ");
                                v.push_str(&value);
                            }
                            None => out.push((name.clone(), value)),
                        }
                    }
                    Line::Detach(name) => out.retain(|(n, _)| !n.eq_ignore_ascii_case(name)),
                }
            }
        }
        out
    }
}

fn pattern(line: &str) -> Result<Vec<Piece>, String> {
    if line.contains("://") {
        return Err(format!("{line:?}: absolute URLs (with a host) are not supported; use a path"));
    }
    if !line.starts_with('/') {
        return Err(format!("{line:?}: a URL pattern starts with '/'"));
    }
    if line.contains(char::is_whitespace) {
        return Err(format!("{line:?}: a URL pattern has no spaces (header lines are indented)"));
    }
    let mut pieces = Vec::new();
    let mut lit = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let placeholder = c == ':' && chars.peek().is_some_and(char::is_ascii_alphabetic);
        if c != '*' && !placeholder {
            lit.push(c);
            continue;
        }
        if !lit.is_empty() {
            pieces.push(Piece::Lit(std::mem::take(&mut lit)));
        }
        if c == '*' {
            if pieces.contains(&Piece::Splat) {
                return Err(format!("{line:?}: only one '*' per pattern"));
            }
            pieces.push(Piece::Splat);
        } else {
            let mut name = String::new();
            while let Some(&d) = chars.peek().filter(|d| d.is_ascii_alphanumeric() || **d == '_') {
                name.push(d);
                chars.next();
            }
            if pieces.contains(&Piece::Placeholder(name.clone())) {
                return Err(format!("{line:?}: placeholder :{name} used twice"));
            }
            pieces.push(Piece::Placeholder(name));
        }
    }
    if !lit.is_empty() {
        pieces.push(Piece::Lit(lit));
    }
    Ok(pieces)
}

/// The captures when `url` matches the whole pattern.
fn matches(p: &[Piece], url: &str) -> Option<Captures> {
    let mut caps = Vec::new();
    match_at(p, url, &mut caps).then_some(caps)
}

fn match_at(p: &[Piece], s: &str, caps: &mut Captures) -> bool {
    let Some((first, rest)) = p.split_first() else { return s.is_empty() };
    match first {
        Piece::Lit(l) => s.strip_prefix(l.as_str()).is_some_and(|s| match_at(rest, s, caps)),
        Piece::Splat | Piece::Placeholder(_) => {
            let (name, max) = match first {
                Piece::Placeholder(n) => (n.as_str(), s.find('/').unwrap_or(s.len())),
                _ => ("splat", s.len()),
            };
            // A placeholder takes at least one character; the splat may be empty. Longest first (greedy).
            let min = usize::from(matches!(first, Piece::Placeholder(_)));
            for end in (min..=max).rev().filter(|&e| s.is_char_boundary(e)) {
                caps.push((name.to_string(), s[..end].to_string()));
                if match_at(rest, &s[end..], caps) {
                    return true;
                }
                caps.pop();
            }
            false
        }
    }
}

/// Replaces `:name` in a value with its capture (longest names first, so `:year` is not read as `:y` + `ear`).
fn substitute(value: &str, caps: &Captures) -> String {
    if caps.is_empty() || !value.contains(':') {
        return value.to_string();
    }
    let mut sorted: Vec<&(String, String)> = caps.iter().collect();
    sorted.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    'outer: while let Some(i) = rest.find(':') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        for (name, v) in &sorted {
            let boundary = |t: &str| !t.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
            if let Some(t) = after.strip_prefix(name.as_str()).filter(|t| boundary(t)) {
                out.push_str(v);
                rest = t;
                continue 'outer;
            }
        }
        out.push(':');
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(file: &str, urls: &[&str]) -> Vec<(String, String)> {
        HeadersFile::parse(file).unwrap().headers_for(urls)
    }

    fn pair(n: &str, v: &str) -> (String, String) {
        (n.to_string(), v.to_string())
    }

    #[test]
    fn blocks_splats_and_merging() {
        let f = "# site headers\n/*\n  X-Frame-Options: DENY\n  X-A: one\n\n/fonts/*\n  Access-Control-Allow-Origin: *\n  X-A: two\n";
        assert_eq!(h(f, &["/index.html"]), vec![pair("X-Frame-Options", "DENY"), pair("X-A", "one")]);
        assert_eq!(
            h(f, &["/fonts/a/b.woff2"]),
            vec![pair("X-Frame-Options", "DENY"), pair("X-A", "one, two"), pair("Access-Control-Allow-Origin", "*")]
        );
        assert_eq!(h("/fonts/*\n  X: y\n", &["/fonts"]), vec![], "the literal '/' before the splat is required");
        assert_eq!(h("/fonts/*\n  X: y\n", &["/fonts/"]).len(), 1, "the splat may be empty");
    }

    #[test]
    fn exact_paths_placeholders_and_detach() {
        let f = "/*\n  X-Robots-Tag: noindex\n/blog/:year/:slug\n  X-Post: :year-:slug\n  ! X-Robots-Tag\n/about/\n  X-About: yes\n";
        assert_eq!(h(f, &["/blog/2024/hello.html"]), vec![pair("X-Post", "2024-hello.html")]);
        assert_eq!(h(f, &["/blog/2024/a/b"]), vec![pair("X-Robots-Tag", "noindex")], "a placeholder is one segment");
        assert_eq!(
            h(f, &["/about/index.html", "/about/"]),
            vec![pair("X-Robots-Tag", "noindex"), pair("X-About", "yes")]
        );
        assert_eq!(
            h("/assets/*\n  Link: </x/:splat>; rel=preload\n", &["/assets/a.css"]),
            vec![pair("Link", "</x/a.css>; rel=preload")]
        );
        assert_eq!(h("/a/*.js\n  X: 1\n", &["/a/b/c.js"]).len(), 1);
        assert_eq!(h("/a/*.js\n  X: 1\n", &["/a/b/c.css"]).len(), 0);
    }

    #[test]
    fn errors_name_the_line() {
        for (file, line, what) in [
            ("  X: y\n", 1, "before any URL pattern"),
            ("/a\n  X y\n", 2, "expected 'Name: value'"),
            ("/a\n\n  Bad Name: y\n", 3, "invalid header name"),
            ("https://example.com/*\n  X: y\n", 1, "absolute URLs"),
            ("/a/*/b/*\n", 1, "only one '*'"),
            ("/:a/:a\n", 1, "used twice"),
            ("/a\n  Content-Length: 3\n", 2, "set by the server"),
            ("relative\n", 1, "starts with '/'"),
        ] {
            let e = HeadersFile::parse(file).unwrap_err();
            assert!(e.starts_with(&format!("_headers:{line}: ")) && e.contains(what), "{file:?}: {e}");
        }
    }
}
