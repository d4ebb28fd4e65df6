//! Which missing paths the SPA fallback answers with `/index.html`: page navigations only. A browser that
//! navigates asks for a path without a file extension, or says it wants HTML first (`Accept: text/html,...`);
//! a missing `/app.js` or `/logo.png` is a broken asset and gets 404, not a page that breaks it in odd ways.

/// Allocation-free: one scan of the last segment and of the first media range of Accept.
pub fn is_navigation(path: &[u8], accept: Option<&[u8]>) -> bool {
    let last = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    if !last.contains(&b'.') {
        return true;
    }
    prefers_html(accept)
}

/// Whether `Accept` puts HTML first. The first media range is the client's preference (browsers put text/html
/// first for navigations; fetch() and <script> send */* or the asset's own type).
pub fn prefers_html(accept: Option<&[u8]>) -> bool {
    accept.is_some_and(|a| {
        let first = a.split(|&b| b == b',').next().unwrap_or(a);
        let media = first.split(|&b| b == b';').next().unwrap_or(first);
        let media = media.trim_ascii();
        media.eq_ignore_ascii_case(b"text/html") || media.eq_ignore_ascii_case(b"application/xhtml+xml")
    })
}

#[cfg(test)]
mod tests {
    use super::is_navigation;

    #[test]
    fn navigations_and_assets() {
        assert!(is_navigation(b"/app/settings", None));
        assert!(is_navigation(b"/app/settings/", None));
        assert!(!is_navigation(b"/app.js", None));
        assert!(!is_navigation(b"/img/logo.png", Some(b"image/avif,image/webp,*/*")));
        assert!(!is_navigation(b"/app.js", Some(b"*/*")));
        assert!(is_navigation(b"/user/jane.doe", Some(b"text/html,application/xhtml+xml,*/*;q=0.8")));
        assert!(is_navigation(b"/v1.2", Some(b" Text/HTML ; q=1")));
        assert!(!is_navigation(b"/data.json", Some(b"application/json, text/html")));
    }
}
