//! The response headers of one file, decided once at load time from every source, lowest precedence first:
//!
//! 1. the default security headers (`--security-headers`, security.rs);
//! 2. the site's `_headers` file (headers_file.rs);
//! 3. `--header` rules (the StaticSite's `spec.server.headers`): the platform's word wins over the content's;
//! 4. CORS (`--cors`): `Access-Control-Allow-Origin: *` or `Vary: Origin` for files under a rule.
//!
//! A name set by a later source replaces the earlier ones. `Content-Type` from 2 or 3 replaces the type guessed
//! from the extension; `Cache-Control` from 2 or 3 replaces `--default-cache-control` (a matching
//! `--cache-control` rule still wins over both).
//!
//! A file under an access rule (guard/) is private, whatever the sources say: its `Cache-Control` made private
//! and the headers only shared caches read left out (at any of the URLs it answers at, its clean URL included).

use crate::headers::cors;
use crate::headers::security;
use crate::headers::site_file::{self, HeadersFile};
use crate::site::walk::Found;
use crate::site_value::{HeaderRule, SiteValue};

pub use crate::headers::resolved::Resolved;

/// Takes the site's `_headers` out of the walked files (it is never served) and parses it; an empty file when
/// there is none. An unreadable or invalid file is an error: the load fails and the previous content stays.
pub(crate) fn take_site_file(found: &mut Vec<Found>) -> Result<HeadersFile, String> {
    let want = format!("/{}", site_file::NAME);
    let Some(i) = found.iter().position(|f| f.url == want) else { return Ok(HeadersFile::default()) };
    let f = found.remove(i);
    let text = String::from_utf8(f.read()?).map_err(|_| format!("{}: not UTF-8", f.fs_path.display()))?;
    HeadersFile::parse(&text)
}

fn set(out: &mut Vec<(String, String)>, name: &str, value: &str) {
    out.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    out.push((name.to_string(), value.to_string()));
}

/// The URLs a file answers at: its path, and `/dir/` for `/dir/index.html`.
fn urls_of(url: &str) -> Vec<&str> {
    match url.strip_suffix("index.html") {
        Some(dir) if dir.ends_with('/') => vec![url, dir],
        _ => vec![url],
    }
}

pub fn resolve(cfg: &SiteValue, site: &HeadersFile, url: &str) -> Resolved {
    let mut extra: Vec<(String, String)> = Vec::new();
    if cfg.security_headers {
        for (n, v) in security::DEFAULTS {
            set(&mut extra, n, v);
        }
    }
    if !site.is_empty() {
        for (n, v) in site.headers_for(&urls_of(url)) {
            set(&mut extra, &n, &v);
        }
    }
    // `--header` rules replace lower sources by name, but two `--header` rules of one name both stay.
    let user: Vec<&HeaderRule> = cfg.headers.iter().filter(|h| h.applies_to(url)).collect();
    extra.retain(|(n, _)| !user.iter().any(|h| h.name.eq_ignore_ascii_case(n)));
    extra.extend(user.iter().map(|h| (h.name.clone(), h.value.clone())));
    let cors = cors::rule_for(&cfg.cors, url);
    if let Some(i) = cors {
        let (n, v) = cfg.cors[i as usize].static_headers();
        set(&mut extra, n, v);
    }
    let mut take = |name: &str| {
        let i = extra.iter().position(|(n, _)| n.eq_ignore_ascii_case(name))?;
        Some(extra.remove(i).1)
    };
    let content_type = take("Content-Type");
    let user_cc = take("Cache-Control");
    let rule_cc = cfg.cache_control.iter().find(|r| r.glob.matches(url)).map(|r| r.value.clone());
    let mut cache_control = rule_cc.or(user_cc).unwrap_or_else(|| cfg.default_cache_control.clone());
    if let Some(a) = cfg.access.as_deref() {
        let clean = url.strip_suffix(".html").filter(|u| !u.is_empty() && !u.ends_with('/'));
        if urls_of(url).into_iter().chain(clean).any(|u| a.protects(u)) {
            cache_control = crate::guard::private_cache_control(&cache_control);
            extra.retain(|(n, _)| !crate::guard::shared_cache_header(n));
        }
    }
    Resolved { cache_control, content_type, extra, cors }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::site_value::{parse_cache_rule, parse_header_rule};

    /// The defaults without the security headers, so each test sees only the rules it sets.
    fn plain() -> SiteValue {
        SiteValue { security_headers: false, ..SiteValue::default() }
    }

    fn names(r: &Resolved) -> Vec<(&str, &str)> {
        r.extra.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect()
    }

    #[test]
    fn precedence_defaults_then_file_then_flags_then_cors() {
        let cfg = SiteValue {
            security_headers: true,
            headers: vec![parse_header_rule("Referrer-Policy: no-referrer").unwrap()],
            cors: vec![cors::parse_rule("/fonts/**=*").unwrap()],
            ..SiteValue::default()
        };
        let site = HeadersFile::parse("/*\n  X-Content-Type-Options: custom\n  X-Site: 1\n").unwrap();
        let r = resolve(&cfg, &site, "/fonts/a.woff2");
        assert_eq!(
            names(&r),
            vec![
                ("Permissions-Policy", security::DEFAULTS[2].1),
                ("X-Content-Type-Options", "custom"),
                ("X-Site", "1"),
                ("Referrer-Policy", "no-referrer"),
                ("Access-Control-Allow-Origin", "*"),
            ]
        );
        assert_eq!(r.cors, Some(0));
        assert_eq!(
            resolve(&plain(), &HeadersFile::default(), "/a.html"),
            Resolved { cache_control: "no-cache".into(), ..Resolved::default() }
        );
    }

    #[test]
    fn content_type_and_cache_control_from_rules() {
        let site =
            HeadersFile::parse("/feed\n  Content-Type: application/rss+xml\n/assets/*\n  Cache-Control: max-age=60\n")
                .unwrap();
        let cfg = SiteValue { cache_control: vec![parse_cache_rule("*.js=immutable").unwrap()], ..plain() };
        let r = resolve(&cfg, &site, "/feed");
        assert_eq!((r.content_type.as_deref(), r.extra.len()), (Some("application/rss+xml"), 0));
        assert_eq!(resolve(&cfg, &site, "/assets/a.css").cache_control, "max-age=60");
        assert_eq!(resolve(&cfg, &site, "/assets/a.js").cache_control, "immutable", "--cache-control wins");
        assert_eq!(resolve(&cfg, &site, "/b.css").cache_control, "no-cache");
    }

    #[test]
    fn index_files_match_their_directory_url() {
        let site = HeadersFile::parse("/docs/\n  X-Docs: yes\n").unwrap();
        assert_eq!(resolve(&plain(), &site, "/docs/index.html").extra.len(), 1);
        assert_eq!(resolve(&plain(), &site, "/docs/other.html").extra.len(), 0);
    }
}
