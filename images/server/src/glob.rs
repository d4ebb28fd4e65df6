//! Minimal glob matching for per-path rules (Cache-Control, extra headers).
//! A pattern without `/` matches the file name at any depth (`*.html`); a pattern with `/` matches the whole
//! URL path (`/assets/**`). `*` matches within one segment, `**` across segments, `?` one character.

pub fn matches(pattern: &str, path: &str) -> bool {
    if pattern.contains('/') {
        m(pattern.as_bytes(), path.as_bytes())
    } else {
        let name = path.rsplit('/').next().unwrap_or(path);
        m(pattern.as_bytes(), name.as_bytes())
    }
}

fn m(p: &[u8], s: &[u8]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some(b'*') if p.get(1) == Some(&b'*') => {
            let rest = &p[2..];
            (0..=s.len()).any(|i| m(rest, &s[i..]))
        }
        Some(b'*') => {
            let rest = &p[1..];
            for i in 0..=s.len() {
                if m(rest, &s[i..]) {
                    return true;
                }
                if i < s.len() && s[i] == b'/' {
                    break;
                }
            }
            false
        }
        Some(b'?') => !s.is_empty() && s[0] != b'/' && m(&p[1..], &s[1..]),
        Some(&c) => s.first() == Some(&c) && m(&p[1..], &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn name_patterns_match_at_any_depth() {
        assert!(matches("*.html", "/index.html"));
        assert!(matches("*.html", "/a/b/page.html"));
        assert!(!matches("*.html", "/a/b/page.htm"));
        assert!(matches("app.??.js", "/js/app.v1.js"));
    }

    #[test]
    fn path_patterns() {
        assert!(matches("/assets/**", "/assets/a/b.css"));
        assert!(matches("/assets/*", "/assets/b.css"));
        assert!(!matches("/assets/*", "/assets/a/b.css"));
        assert!(matches("/**/*.js", "/x/y/z.js"));
        assert!(!matches("/img/*", "/assets/img/x.png"));
    }
}
