//! A request head as the core sees it, and the checks RFC 9113 §8.2–§8.3 make on the decoded fields before
//! a request exists. A malformed request is a stream error of type PROTOCOL_ERROR (§8.1.1).

use super::hpack::FieldList;
use super::priority::Priority;

/// Why a header list is not a valid request (each a stream PROTOCOL_ERROR; h2spec 8.1.2.x).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    UppercaseOrInvalidName,
    InvalidValue,
    UnknownPseudo,
    PseudoAfterRegular,
    DuplicatePseudo,
    ConnectionSpecific,
    MissingPseudo,
    EmptyPath,
    /// `:method` not a token (RFC 9110 §9.1), the empty one included.
    InvalidMethod,
    /// `:scheme` not a URI scheme (RFC 3986 §3.1: a letter, then letters, digits, `+`, `-`, `.`).
    InvalidScheme,
    BadContentLength,
    PseudoInTrailers,
}

/// Where the pseudo-header values sit in the field list, and what the checks parsed on the way.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Pseudo {
    method: Option<u16>,
    scheme: Option<u16>,
    authority: Option<u16>,
    path: Option<u16>,
    host: Option<u16>,
    pub content_length: Option<u64>,
    pub priority: Option<u16>,
    /// Index of the first regular field.
    regular: u16,
}

/// RFC 9110 §5.6.2: the token characters that are neither letters nor digits.
fn tchar_symbol(b: u8) -> bool {
    matches!(b, b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~')
}

fn valid_name(n: &[u8]) -> bool {
    // RFC 9113 §8.2.1: no uppercase, no separators or controls; tchar only (the colon of pseudo-headers aside).
    !n.is_empty() && n.iter().all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || tchar_symbol(b))
}

fn valid_value(v: &[u8]) -> bool {
    // §8.2.1: no NUL, CR or LF; no leading or trailing whitespace.
    !v.iter().any(|&b| b == 0 || b == b'\r' || b == b'\n')
        && !matches!(v.first(), Some(b' ' | b'\t'))
        && !matches!(v.last(), Some(b' ' | b'\t'))
}

fn valid_method(m: &[u8]) -> bool {
    // RFC 9110 §9.1: method = token. Upper case is allowed (methods are case-sensitive, GET is one).
    !m.is_empty() && m.iter().all(|&b| b.is_ascii_alphanumeric() || tchar_symbol(b))
}

fn valid_scheme(s: &[u8]) -> bool {
    s.first().is_some_and(u8::is_ascii_alphabetic)
        && s.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

fn content_length(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter().try_fold(0u64, |n, &d| n.checked_mul(10)?.checked_add((d - b'0') as u64))
}

/// Checks a request's header list (§8.3.1) and finds its pseudo-headers.
pub(crate) fn check_request(l: &FieldList) -> Result<Pseudo, Malformed> {
    let mut p = Pseudo { regular: l.len() as u16, ..Pseudo::default() };
    let mut seen_regular = false;
    for (i, (n, v)) in l.iter().enumerate() {
        let i = i as u16;
        if !valid_value(v) {
            return Err(Malformed::InvalidValue);
        }
        if let Some(pn) = n.strip_prefix(b":") {
            if seen_regular {
                return Err(Malformed::PseudoAfterRegular);
            }
            let slot = match pn {
                b"method" => &mut p.method,
                b"scheme" => &mut p.scheme,
                b"authority" => &mut p.authority,
                b"path" => &mut p.path,
                // :status is a response field, :protocol needs extended CONNECT, which we do not offer.
                _ => return Err(Malformed::UnknownPseudo),
            };
            if slot.replace(i).is_some() {
                return Err(Malformed::DuplicatePseudo);
            }
            continue;
        }
        if !valid_name(n) {
            return Err(Malformed::UppercaseOrInvalidName);
        }
        if !seen_regular {
            seen_regular = true;
            p.regular = i;
        }
        match n {
            b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade" => {
                return Err(Malformed::ConnectionSpecific)
            }
            b"te" if v != b"trailers" => return Err(Malformed::ConnectionSpecific),
            b"content-length" => {
                let cl = content_length(v).ok_or(Malformed::BadContentLength)?;
                if p.content_length.is_some_and(|old| old != cl) {
                    return Err(Malformed::BadContentLength);
                }
                p.content_length = Some(cl);
            }
            b"host" if p.host.is_none() => p.host = Some(i),
            b"priority" if p.priority.is_none() => p.priority = Some(i),
            _ => {}
        }
    }
    let Some(m) = p.method else { return Err(Malformed::MissingPseudo) };
    // §8.3.1: a request whose pseudo-header values are not what their grammar allows is malformed (an empty
    // :method reached the core as a request before: the h2_frames fuzz target found it).
    if !valid_method(l.get(m as usize).1) {
        return Err(Malformed::InvalidMethod);
    }
    if p.scheme.is_some_and(|s| !valid_scheme(l.get(s as usize).1)) {
        return Err(Malformed::InvalidScheme);
    }
    if l.get(m as usize).1 == b"CONNECT" {
        // §8.5: only :method and :authority.
        if p.scheme.is_some() || p.path.is_some() || p.authority.is_none() {
            return Err(Malformed::MissingPseudo);
        }
        return Ok(p);
    }
    match (p.scheme, p.path) {
        (Some(_), Some(path)) if l.get(path as usize).1.is_empty() => Err(Malformed::EmptyPath),
        (Some(_), Some(_)) => Ok(p),
        _ => Err(Malformed::MissingPseudo),
    }
}

/// Checks a trailer section (§8.1): no pseudo-headers, valid fields.
pub(crate) fn check_trailers(l: &FieldList) -> Result<(), Malformed> {
    for (n, v) in l.iter() {
        if n.first() == Some(&b':') {
            return Err(Malformed::PseudoInTrailers);
        }
        if !valid_name(n) {
            return Err(Malformed::UppercaseOrInvalidName);
        }
        if !valid_value(v) {
            return Err(Malformed::InvalidValue);
        }
    }
    Ok(())
}

/// One request head, borrowed from the connection until the next `recv`.
pub struct RequestHead<'a> {
    pub stream: u32,
    /// END_STREAM came with the head: no body follows.
    pub end_stream: bool,
    fields: &'a FieldList,
    p: Pseudo,
}

impl<'a> RequestHead<'a> {
    pub(crate) fn new(stream: u32, end_stream: bool, fields: &'a FieldList, p: Pseudo) -> RequestHead<'a> {
        RequestHead { stream, end_stream, fields, p }
    }

    fn at(&self, i: Option<u16>) -> &'a [u8] {
        i.map_or(b"", |i| self.fields.get(i as usize).1)
    }

    pub fn method(&self) -> &'a [u8] {
        self.at(self.p.method)
    }

    /// Empty for CONNECT only.
    pub fn path(&self) -> &'a [u8] {
        self.at(self.p.path)
    }

    pub fn scheme(&self) -> &'a [u8] {
        self.at(self.p.scheme)
    }

    /// `:authority`, else the `host` field (§8.3.1), else empty.
    pub fn authority(&self) -> &'a [u8] {
        self.at(self.p.authority.or(self.p.host))
    }

    pub fn content_length(&self) -> Option<u64> {
        self.p.content_length
    }

    /// The RFC 9218 priority the request asked for.
    pub fn priority(&self) -> Priority {
        match self.p.priority {
            Some(i) => Priority::default().parse(self.fields.get(i as usize).1),
            None => Priority::default(),
        }
    }

    /// The regular fields in order (names lowercase), e.g. for `vary`-style lookups.
    pub fn fields(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        let f = self.fields;
        (self.p.regular as usize..f.len()).map(move |i| f.get(i))
    }

    /// The first value of field `name` (lowercase).
    pub fn field(&self, name: &[u8]) -> Option<&'a [u8]> {
        self.fields().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// The fields the static core reads, by name: `accept-encoding`, `if-none-match`, `if-modified-since`,
    /// `range`, `if-range`, `origin`, `access-control-request-method`, `access-control-request-headers`.
    pub fn accept_encoding(&self) -> Option<&'a [u8]> {
        self.field(b"accept-encoding")
    }
}

#[cfg(test)]
mod tests {
    use super::super::hpack::encode;
    use super::super::hpack::Decoder;
    use super::*;

    fn list(fields: &[(&str, &str)]) -> FieldList {
        let mut b = Vec::new();
        for (n, v) in fields {
            // Uppercase names are encoded as literals to test the check (the encoder asserts lowercase).
            b.push(0x00);
            encode::string(&mut b, n.as_bytes());
            encode::string(&mut b, v.as_bytes());
        }
        let mut l = FieldList::new(1 << 16);
        Decoder::new(4096).decode(&b, &mut l).unwrap();
        l
    }

    const GET: [(&str, &str); 4] = [(":method", "GET"), (":scheme", "https"), (":path", "/a"), (":authority", "x")];

    fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        GET.iter().copied().chain(extra.iter().copied()).collect()
    }

    #[test]
    fn valid_request_and_accessors() {
        let l = list(&with(&[("accept-encoding", "br"), ("priority", "u=1, i"), ("te", "trailers")]));
        let p = check_request(&l).unwrap();
        let h = RequestHead::new(1, true, &l, p);
        assert_eq!(
            (h.method(), h.path(), h.scheme(), h.authority()),
            (&b"GET"[..], &b"/a"[..], &b"https"[..], &b"x"[..])
        );
        assert_eq!(h.accept_encoding(), Some(&b"br"[..]));
        assert_eq!(h.priority(), Priority { urgency: 1, incremental: true });
        assert_eq!(h.fields().count(), 3);
        let l = list(&[(":method", "GET"), (":scheme", "http"), (":path", "/"), ("host", "h.example")]);
        let h = RequestHead::new(1, true, &l, check_request(&l).unwrap());
        assert_eq!(h.authority(), b"h.example");
    }

    #[test]
    fn malformed_requests() {
        use Malformed::*;
        for (fields, want) in [
            (with(&[("Accept", "x")]), UppercaseOrInvalidName),
            (with(&[("x y", "1")]), UppercaseOrInvalidName),
            (with(&[(":status", "200")]), UnknownPseudo),
            (with(&[(":foo", "1")]), UnknownPseudo),
            (with(&[("a", "1"), (":path", "/b")]), PseudoAfterRegular),
            (with(&[(":path", "/b")]), DuplicatePseudo),
            (with(&[("connection", "keep-alive")]), ConnectionSpecific),
            (with(&[("te", "gzip")]), ConnectionSpecific),
            (with(&[("content-length", "1x")]), BadContentLength),
            (with(&[("a", " lead")]), InvalidValue),
            (vec![(":method", "GET"), (":scheme", "https")], MissingPseudo),
            (vec![(":scheme", "https"), (":path", "/")], MissingPseudo),
            (vec![(":method", "GET"), (":scheme", "https"), (":path", "")], EmptyPath),
            (vec![(":method", ""), (":scheme", "https"), (":path", "/")], InvalidMethod),
            (vec![(":method", "GE T"), (":scheme", "https"), (":path", "/")], InvalidMethod),
            (vec![(":method", "GET/"), (":scheme", "https"), (":path", "/")], InvalidMethod),
            (vec![(":method", "GET"), (":scheme", ""), (":path", "/")], InvalidScheme),
            (vec![(":method", "GET"), (":scheme", "1http"), (":path", "/")], InvalidScheme),
            (vec![(":method", "GET"), (":scheme", "ht tp"), (":path", "/")], InvalidScheme),
        ] {
            assert_eq!(check_request(&list(&fields)).err(), Some(want), "{fields:?}");
        }
        for (method, scheme) in [("M-SEARCH", "https"), ("PURGE", "http"), ("GET", "svn+ssh")] {
            assert!(
                check_request(&list(&[(":method", method), (":scheme", scheme), (":path", "/")])).is_ok(),
                "{method} {scheme}"
            );
        }
        assert_eq!(check_trailers(&list(&[(":path", "/")])), Err(PseudoInTrailers));
        assert_eq!(check_trailers(&list(&[("x-checksum", "1")])), Ok(()));
    }
}
