//! The canonical rendering of a site value: the contract's field order, only the fields that differ from their
//! defaults, one field per line, each value compact. The same value always renders the same bytes, so a value
//! built from flags has a stable revision, and flags and the file that says the same thing render alike.

use super::SiteValue;

/// A JSON string (serde_json escapes it).
fn s(v: &str) -> String {
    serde_json::to_string(v).expect("a string always serialises")
}

fn obj(fields: &[(&str, String)]) -> String {
    let inner: Vec<String> = fields.iter().map(|(k, v)| format!("{}: {v}", s(k))).collect();
    format!("{{{}}}", inner.join(", "))
}

fn arr(items: impl Iterator<Item = String>) -> String {
    format!("[{}]", items.collect::<Vec<_>>().join(", "))
}

fn strings(items: &[String]) -> String {
    arr(items.iter().map(|i| s(i)))
}

pub(super) fn render(v: &SiteValue) -> String {
    let d = SiteValue::default();
    let mut f: Vec<(&str, String)> = vec![("version", super::json::VERSION.to_string())];
    if !v.cache_control.is_empty() {
        let items = v.cache_control.iter().map(|r| obj(&[("glob", s(r.glob.pattern())), ("value", s(&r.value))]));
        f.push(("cacheControl", arr(items)));
    }
    if v.default_cache_control != d.default_cache_control {
        f.push(("defaultCacheControl", s(&v.default_cache_control)));
    }
    if !v.headers.is_empty() {
        let items = v.headers.iter().map(|h| {
            let mut o = Vec::new();
            if let Some(g) = &h.glob {
                o.push(("glob", s(g.pattern())));
            }
            o.push(("name", s(&h.name)));
            o.push(("value", s(&h.value)));
            obj(&o)
        });
        f.push(("headers", arr(items)));
    }
    if v.security_headers != d.security_headers {
        f.push(("securityHeaders", v.security_headers.to_string()));
    }
    if !v.cors.is_empty() {
        let items = v.cors.iter().map(|r| {
            let origins = if r.any { vec!["*".to_string()] } else { r.origins.clone() };
            let mut o = vec![("glob", s(r.glob.pattern())), ("allowOrigins", strings(&origins))];
            if let Some(m) = &r.written.methods {
                o.push(("allowMethods", strings(m)));
            }
            if let Some(h) = &r.written.headers {
                o.push(("allowHeaders", strings(h)));
            }
            if let Some(a) = r.written.max_age {
                o.push(("maxAge", a.to_string()));
            }
            obj(&o)
        });
        f.push(("cors", arr(items)));
    }
    if v.spa_fallback != d.spa_fallback {
        f.push(("spaFallback", v.spa_fallback.to_string()));
    }
    if let Some(p) = &v.not_found_page {
        f.push(("notFoundPage", s(p)));
    }
    if !v.redirects.is_empty() {
        let items = v.redirects.iter().map(|r| {
            // `from` and `to` as written: the rule's first two tokens.
            let mut t = r.text.split_whitespace();
            let mut o = vec![("from", s(t.next().unwrap_or(""))), ("to", s(t.next().unwrap_or("")))];
            if r.status != 301 {
                o.push(("status", r.status.to_string()));
            }
            if r.force {
                o.push(("force", "true".to_string()));
            }
            obj(&o)
        });
        f.push(("redirects", arr(items)));
    }
    if v.clean_urls != d.clean_urls {
        f.push(("cleanURLs", v.clean_urls.to_string()));
    }
    if !v.error_pages.is_empty() {
        let items = v.error_pages.iter().map(|e| {
            let mut o = vec![("status", e.status.to_string()), ("path", s(&e.path))];
            if e.prefix != "/" {
                o.push(("pathPrefix", s(&e.prefix)));
            }
            obj(&o)
        });
        f.push(("errorPages", arr(items)));
    }
    if let Some(port) = v.https_redirect {
        let o = if port == 443 { obj(&[]) } else { obj(&[("port", port.to_string())]) };
        f.push(("httpsRedirect", o));
    }
    if let Some(h) = &v.hsts {
        f.push(("hsts", s(h)));
    }
    // periodSeconds 1 and a burst of the count are the defaults: left out, as the operator leaves them out.
    let bucket = |count: &'static str, r: &crate::fairshare::Rate| {
        let mut o = vec![(count, r.requests.to_string())];
        if r.period_s != 1 {
            o.push(("periodSeconds", r.period_s.to_string()));
        }
        if r.burst != r.requests {
            o.push(("burst", r.burst.to_string()));
        }
        obj(&o)
    };
    let mut limits = Vec::new();
    if let Some(r) = &v.per_client {
        limits.push(("perClient", bucket("requests", r)));
    }
    if let Some(r) = &v.per_client_handshakes {
        limits.push(("perClientHandshakes", bucket("handshakes", r)));
    }
    if !limits.is_empty() {
        f.push(("limits", obj(&limits)));
    }
    if let Some(w) = v.skew_window {
        f.push(("skewProtection", obj(&[("window", s(&format!("{w}s")))])));
    }
    let lines: Vec<String> = f.iter().map(|(k, v)| format!("  {}: {v}", s(k))).collect();
    format!("{{\n{}\n}}\n", lines.join(",\n"))
}
