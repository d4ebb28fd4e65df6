//! `--error-page 'STATUS PATH [PATH_PREFIX]'`: the site file served, with the error status, for errors under a
//! path prefix (default `/`); the longest matching prefix wins. `--not-found-page` stays the 404 page for the
//! whole site when no error page matches.

/// Statuses a request for a path can end in here and that a page can explain (412, 416 and 304 answer
/// conditional or range requests on a file that exists; 408/431/501/505 come before the path is known). 403 is
/// the page a signed-in user gets under a single sign-on rule that does not admit them (guard/session.rs).
pub const STATUSES: [u16; 5] = [400, 403, 404, 405, 414];

#[derive(Debug, Clone, PartialEq)]
pub struct ErrorPage {
    pub status: u16,
    /// A site path (`/404.html`).
    pub path: String,
    /// Starts with `/`.
    pub prefix: String,
}

pub fn parse_error_page(v: &str) -> Result<ErrorPage, String> {
    let bad = |why: &str| format!("--error-page {v:?}: {why} (expected 'STATUS PATH [PATH_PREFIX]')");
    let t: Vec<&str> = v.split_whitespace().collect();
    let (status, path, prefix) = match t[..] {
        [s, p] => (s, p, "/"),
        [s, p, x] => (s, p, x),
        _ => return Err(bad("wrong number of fields")),
    };
    let status: u16 = status.parse().map_err(|_| bad("invalid status"))?;
    if !STATUSES.contains(&status) {
        return Err(bad("status must be one of 400, 403, 404, 405, 414"));
    }
    if !path.starts_with('/') || !prefix.starts_with('/') {
        return Err(bad("PATH and PATH_PREFIX start with /"));
    }
    Ok(ErrorPage { status, path: path.into(), prefix: prefix.into() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        let e = parse_error_page("404 /docs/404.html /docs/").unwrap();
        assert_eq!((e.status, e.path.as_str(), e.prefix.as_str()), (404, "/docs/404.html", "/docs/"));
        assert_eq!(parse_error_page(" 405  /405.html").unwrap().prefix, "/");
        assert!(parse_error_page("500 /500.html").unwrap_err().contains("status must be"));
        assert!(parse_error_page("404").unwrap_err().contains("--error-page"));
        assert!(parse_error_page("404 404.html").is_err());
        assert!(parse_error_page("x /a").is_err());
    }
}
