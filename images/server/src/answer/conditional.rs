//! Conditional requests (RFC 9110 §13): If-Match, If-Unmodified-Since, If-None-Match, If-Modified-Since
//! evaluated in the order of §13.2.2, and If-Range for range requests.

use crate::dates;

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Outcome {
    /// Serve the representation (maybe a range of it).
    Proceed,
    /// 304 Not Modified.
    NotModified,
    /// 412 Precondition Failed.
    PreconditionFailed,
}

/// The header values of a request that matter here.
#[derive(Default, Clone, Copy)]
pub struct Conditions<'a> {
    pub if_match: Option<&'a [u8]>,
    pub if_unmodified_since: Option<&'a [u8]>,
    pub if_none_match: Option<&'a [u8]>,
    pub if_modified_since: Option<&'a [u8]>,
}

/// Iterates the entity-tags of a list header: yields (weak, opaque-tag including quotes), or None on "*".
fn for_each_tag(list: &[u8], mut f: impl FnMut(bool, &[u8]) -> bool) -> bool {
    let mut i = 0;
    while i < list.len() {
        match list[i] {
            b' ' | b'\t' | b',' => i += 1,
            _ => {
                let weak = list[i..].starts_with(b"W/");
                if weak {
                    i += 2;
                }
                if list.get(i) != Some(&b'"') {
                    return false; // malformed: stop, no match
                }
                let end = match list[i + 1..].iter().position(|&b| b == b'"') {
                    Some(e) => i + 1 + e + 1,
                    None => return false,
                };
                if f(weak, &list[i..end]) {
                    return true;
                }
                i = end;
            }
        }
    }
    false
}

fn is_star(v: &[u8]) -> bool {
    v.trim_ascii() == b"*"
}

/// Weak comparison (If-None-Match): opaque tags equal, weakness ignored.
pub fn none_match_hits(list: &[u8], etag: &[u8]) -> bool {
    is_star(list) || for_each_tag(list, |_, t| t == etag)
}

/// Strong comparison (If-Match, If-Range): both strong and equal. Our ETags are always strong.
pub fn strong_match(list: &[u8], etag: &[u8]) -> bool {
    is_star(list) || for_each_tag(list, |weak, t| !weak && t == etag)
}

/// Evaluates preconditions for a GET/HEAD of an existing representation.
pub fn evaluate(c: &Conditions, etag: &[u8], last_modified: i64) -> Outcome {
    if let Some(im) = c.if_match {
        if !strong_match(im, etag) {
            return Outcome::PreconditionFailed;
        }
    } else if let Some(ius) = c.if_unmodified_since {
        if let Some(t) = dates::parse(ius) {
            if last_modified > t {
                return Outcome::PreconditionFailed;
            }
        }
    }
    if let Some(inm) = c.if_none_match {
        if none_match_hits(inm, etag) {
            return Outcome::NotModified;
        }
    } else if let Some(ims) = c.if_modified_since {
        if let Some(t) = dates::parse(ims) {
            if last_modified <= t {
                return Outcome::NotModified;
            }
        }
    }
    Outcome::Proceed
}

/// If-Range: true when the Range header may be honoured.
pub fn if_range_allows(if_range: Option<&[u8]>, etag: &[u8], last_modified: i64) -> bool {
    let v = match if_range {
        None => return true,
        Some(v) => v.trim_ascii(),
    };
    if v.starts_with(b"\"") || v.starts_with(b"W/") {
        return !v.starts_with(b"W/") && v == etag;
    }
    // A date validator matches only an exactly equal Last-Modified.
    dates::parse(v) == Some(last_modified)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ETAG: &[u8] = b"\"abc\"";
    const LM: i64 = 784111777; // Sun, 06 Nov 1994 08:49:37 GMT

    fn cond<'a>(
        im: Option<&'a str>,
        ius: Option<&'a str>,
        inm: Option<&'a str>,
        ims: Option<&'a str>,
    ) -> Conditions<'a> {
        Conditions {
            if_match: im.map(str::as_bytes),
            if_unmodified_since: ius.map(str::as_bytes),
            if_none_match: inm.map(str::as_bytes),
            if_modified_since: ims.map(str::as_bytes),
        }
    }

    #[test]
    fn if_none_match_weak_comparison() {
        assert_eq!(evaluate(&cond(None, None, Some("\"abc\""), None), ETAG, LM), Outcome::NotModified);
        assert_eq!(evaluate(&cond(None, None, Some("W/\"abc\""), None), ETAG, LM), Outcome::NotModified);
        assert_eq!(evaluate(&cond(None, None, Some("\"x\", W/\"abc\""), None), ETAG, LM), Outcome::NotModified);
        assert_eq!(evaluate(&cond(None, None, Some("*"), None), ETAG, LM), Outcome::NotModified);
        assert_eq!(evaluate(&cond(None, None, Some("\"abcd\""), None), ETAG, LM), Outcome::Proceed);
        assert_eq!(evaluate(&cond(None, None, Some("abc"), None), ETAG, LM), Outcome::Proceed);
    }

    #[test]
    fn if_modified_since() {
        let same = "Sun, 06 Nov 1994 08:49:37 GMT";
        let before = "Sun, 06 Nov 1994 08:49:36 GMT";
        assert_eq!(evaluate(&cond(None, None, None, Some(same)), ETAG, LM), Outcome::NotModified);
        assert_eq!(evaluate(&cond(None, None, None, Some(before)), ETAG, LM), Outcome::Proceed);
        assert_eq!(evaluate(&cond(None, None, None, Some("garbage")), ETAG, LM), Outcome::Proceed);
    }

    #[test]
    fn if_none_match_takes_precedence_over_if_modified_since() {
        let same = "Sun, 06 Nov 1994 08:49:37 GMT";
        assert_eq!(evaluate(&cond(None, None, Some("\"other\""), Some(same)), ETAG, LM), Outcome::Proceed);
    }

    #[test]
    fn if_match_and_if_unmodified_since() {
        assert_eq!(evaluate(&cond(Some("\"abc\""), None, None, None), ETAG, LM), Outcome::Proceed);
        assert_eq!(evaluate(&cond(Some("W/\"abc\""), None, None, None), ETAG, LM), Outcome::PreconditionFailed);
        assert_eq!(evaluate(&cond(Some("\"nope\""), None, None, None), ETAG, LM), Outcome::PreconditionFailed);
        let before = "Sun, 06 Nov 1994 08:49:36 GMT";
        assert_eq!(evaluate(&cond(None, Some(before), None, None), ETAG, LM), Outcome::PreconditionFailed);
        // If-Match present: If-Unmodified-Since is ignored.
        assert_eq!(evaluate(&cond(Some("*"), Some(before), None, None), ETAG, LM), Outcome::Proceed);
    }

    #[test]
    fn if_range() {
        assert!(if_range_allows(None, ETAG, LM));
        assert!(if_range_allows(Some(b"\"abc\""), ETAG, LM));
        assert!(!if_range_allows(Some(b"W/\"abc\""), ETAG, LM));
        assert!(!if_range_allows(Some(b"\"old\""), ETAG, LM));
        assert!(if_range_allows(Some(b"Sun, 06 Nov 1994 08:49:37 GMT"), ETAG, LM));
        assert!(!if_range_allows(Some(b"Sun, 06 Nov 1994 08:49:38 GMT"), ETAG, LM));
    }
}
