//! Globs for per-path rules (`--cache-control`, `--header`), compiled once when the configuration is parsed and
//! matched once per file when the site is loaded — never per request (responses carry precomputed headers).
//!
//! The syntax is the documented one and nothing more: a pattern without `/` matches the file name at any depth
//! (`*.html`), a pattern with `/` matches the whole URL path (`/assets/**`); `*` and `?` stay within a segment,
//! `**` as a whole segment crosses segments (`/assets/**`; `/**/*.js` also matches `/x.js`). globset does the
//! matching. Every other character is literal — `[`, `]`, `{`, `}` and `\` included — because the StaticSite API
//! admits them in globs, and a glob globset would reject (`a[b`) must not keep the server from starting.

use globset::{GlobBuilder, GlobMatcher};

#[derive(Debug, Clone)]
pub struct PathGlob {
    pattern: String,
    /// The pattern has a `/`: match it against the whole URL path rather than the file name.
    whole_path: bool,
    matcher: GlobMatcher,
}

impl PathGlob {
    pub fn new(pattern: &str) -> Result<PathGlob, String> {
        let glob = GlobBuilder::new(&literal_brackets(pattern))
            .literal_separator(true)
            .backslash_escape(false)
            .build()
            .map_err(|e| e.kind().to_string())?;
        Ok(PathGlob {
            pattern: pattern.to_string(),
            whole_path: pattern.contains('/'),
            matcher: glob.compile_matcher(),
        })
    }

    /// Whether the URL path of a file (`/a/b.html`) matches.
    pub fn matches(&self, url_path: &str) -> bool {
        if self.whole_path {
            self.matcher.is_match(url_path)
        } else {
            self.matcher.is_match(url_path.rsplit('/').next().unwrap_or(url_path))
        }
    }

    pub fn pattern(&self) -> &str {
        &self.pattern
    }
}

/// Rewrites `[`, `]`, `{`, `}` as one-character classes (`[[]`): globset's escape when backslashes are literal.
fn literal_brackets(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    for c in pattern.chars() {
        if matches!(c, '[' | ']' | '{' | '}') {
            out.extend(['[', c, ']']);
        } else {
            out.push(c);
        }
    }
    out
}

/// Two globs are the same rule when they were written the same way.
impl PartialEq for PathGlob {
    fn eq(&self, other: &Self) -> bool {
        self.pattern == other.pattern
    }
}

#[cfg(test)]
mod tests {
    use super::PathGlob;

    fn matches(pattern: &str, path: &str) -> bool {
        PathGlob::new(pattern).unwrap().matches(path)
    }

    #[test]
    fn name_patterns_match_at_any_depth() {
        assert!(matches("*.html", "/index.html"));
        assert!(matches("*.html", "/a/b/page.html"));
        assert!(!matches("*.html", "/a/b/page.htm"));
        assert!(matches("app.??.js", "/js/app.v1.js"));
        assert!(!matches("b*", "/b/x.css"), "a name pattern never sees directory names");
    }

    #[test]
    fn path_patterns() {
        assert!(matches("/assets/**", "/assets/a/b.css"));
        assert!(matches("/assets/**", "/assets/b.css"));
        assert!(!matches("/assets/**", "/assetsx/b.css"));
        assert!(matches("/assets/*", "/assets/b.css"));
        assert!(!matches("/assets/*", "/assets/a/b.css"));
        assert!(matches("/**/*.js", "/x/y/z.js"));
        assert!(matches("/**/*.js", "/z.js"));
        assert!(!matches("/img/*", "/assets/img/x.png"));
        assert!(!matches("/a?c", "/a/c"), "? never matches a separator");
        assert!(matches("/a??c", "/aüc"), "? is one byte, as it always was here (globset matches bytes)");
    }

    #[test]
    fn brackets_braces_and_backslashes_are_literal() {
        assert!(matches("/a[1].js", "/a[1].js"));
        assert!(!matches("/a[1].js", "/a1.js"));
        assert!(matches("*.{css,js}", "/x/app.{css,js}"));
        assert!(!matches("*.{css,js}", "/x/app.js"));
        assert!(matches(r"/a\*.txt", r"/a\b.txt"));
        assert!(matches("/x]{[}", "/x]{[}"));
    }

    #[test]
    fn every_pattern_compiles() {
        // Characters the StaticSite API admits in a glob (internal/contract generates globs from them).
        for p in [
            "a[b",
            "/a{b",
            "}",
            "[]",
            "[!x]",
            "a**b",
            "/**",
            "**",
            "?*.css",
            "/assets/img/a b.js",
            "-draft-*.html",
            r"x\",
        ] {
            assert!(PathGlob::new(p).is_ok(), "{p}");
        }
    }
}
