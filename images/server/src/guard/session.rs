//! Single sign-on sessions (issue 44, docs/design/sso.md): the signed cookie the content agent's OpenID Connect
//! login sets (internal/sso, Go) and the server checks. The login itself (the IdP's redirect, the code exchange
//! with PKCE, the ID token's signature) happens in the agent, off the serving path; the server only checks a MAC
//! and an expiry, so a signed-in request costs about what a public one does.
//!
//! The contract, shared with internal/sso/cookie.go (a contract test holds the two, internal/sso):
//!
//! - **Cookie** `hs_session=1|<exp>|<email>|<groups>|<mac>`: `1` the format's version; `exp` the expiry in Unix
//!   seconds (decimal, at most 12 digits), past which the server treats the cookie as absent; `email` the ID
//!   token's e-mail, lowercased; `groups` its groups joined by `:`; `mac` the unpadded base64url HMAC-SHA256 of
//!   every byte before the last `|` under one of the site's session keys.
//! - **Values** (the e-mail and each group) are written with `A-Z a-z 0-9 . _ @ -` as themselves and every other
//!   byte as `%XX` (uppercase hex), so they never hold a separator or a byte a cookie may not carry; the rules'
//!   groups are encoded the same way at load, so a group is matched by comparing bytes, decoding nothing.
//! - **Keys**: the keys file (a Secret's key beside the site value) holds one or two keys, one per line, each the
//!   standard base64 of 32 to 64 random bytes. The agent signs with the first; the server accepts any listed,
//!   so a rotation puts the new key first and keeps the previous one second until the old cookies expired.
//!
//! Costs: no allocation and no lock: the value is split in place, the MAC decoded into a stack buffer and checked
//! in constant time (ring), the expiry compared with the worker's clock of the current second. The HMAC runs once
//! per worker and value (up to verified::MAX_VALUE bytes): the worker's table remembers whether a value was signed
//! (guard/mod.rs, `Access::session`); the expiry and the fields are read on every request. benches/access.rs.

use base64::Engine as _;
use ring::hmac;

/// The cookie's name.
pub const COOKIE: &[u8] = b"hs_session";
/// The longest cookie value looked at (browsers keep at most about 4 KiB per cookie).
pub const MAX_VALUE: usize = 4096;
/// At most this many keys: the current one and the previous one.
pub const MAX_KEYS: usize = 2;
const MAC_B64_LEN: usize = 43;

/// The session keys of a site. Debug never shows a key.
#[derive(Clone)]
pub struct Keys {
    raw: Vec<Vec<u8>>,
    keys: Vec<hmac::Key>,
}

impl PartialEq for Keys {
    fn eq(&self, o: &Keys) -> bool {
        self.raw == o.raw
    }
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Keys({} session keys)", self.raw.len())
    }
}

impl Keys {
    /// Parses a keys file: one or two lines of standard base64, 32 to 64 bytes each; blank lines skipped. Errors
    /// name the line by number, never its content (the file is a Secret and the message is logged).
    pub fn parse(text: &str) -> Result<Keys, String> {
        let mut raw = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let key = base64::engine::general_purpose::STANDARD
                .decode(line)
                .map_err(|_| format!("line {}: not standard base64", i + 1))?;
            if !(32..=64).contains(&key.len()) {
                return Err(format!("line {}: a key is 32 to 64 bytes, this one {}", i + 1, key.len()));
            }
            raw.push(key);
        }
        if raw.is_empty() || raw.len() > MAX_KEYS {
            return Err(format!("holds {} keys: one (current) or two (current, then previous)", raw.len()));
        }
        let keys = raw.iter().map(|k| hmac::Key::new(hmac::HMAC_SHA256, k)).collect();
        Ok(Keys { raw, keys })
    }

    /// Signs `body` with the first key: what the agent does (tests mint cookies with it).
    pub fn sign(&self, body: &[u8]) -> String {
        let tag = hmac::sign(&self.keys[0], body);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(tag.as_ref())
    }

    /// The session in cookie value `v`, if its MAC is good under one of the keys and it has not expired at `now`
    /// (Unix seconds). Anything else (malformed, too long, tampered, signed by an unknown key, expired) is None:
    /// the request is treated as not signed in.
    #[inline]
    pub fn verify<'a>(&self, v: &'a [u8], now: i64) -> Option<Session<'a>> {
        if self.signed(v) {
            parse(v, now)
        } else {
            None
        }
    }

    /// Whether the MAC after the last `|` of `v` is good for what precedes it under one of the keys: the costly
    /// part (an HMAC), which the worker's table remembers per value (guard/verified.rs); `parse` is the rest.
    #[inline]
    pub fn signed(&self, v: &[u8]) -> bool {
        if v.len() > MAX_VALUE {
            return false;
        }
        let Some(cut) = v.iter().rposition(|&b| b == b'|') else { return false };
        let (body, mac) = (&v[..cut], &v[cut + 1..]);
        if mac.len() != MAC_B64_LEN {
            return false;
        }
        let mut tag = [0u8; 33];
        match base64::engine::general_purpose::URL_SAFE_NO_PAD.decode_slice(mac, &mut tag) {
            Ok(32) => self.keys.iter().any(|k| hmac::verify(k, body, &tag[..32]).is_ok()),
            _ => false,
        }
    }
}

/// The session in a cookie value whose MAC was found good (`Keys::signed`), if it has not expired at `now`.
/// Signed by us: the agent wrote these fields, so parsing is a check of the format, not of an attacker.
#[inline]
pub fn parse(v: &[u8], now: i64) -> Option<Session<'_>> {
    let cut = v.iter().rposition(|&b| b == b'|')?;
    let mut f = v[..cut].split(|&b| b == b'|');
    let (Some(b"1"), Some(exp), Some(email), Some(groups), None) = (f.next(), f.next(), f.next(), f.next(), f.next())
    else {
        return None;
    };
    if exp.is_empty() || exp.len() > 12 || !exp.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let exp = exp.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
    (now < exp).then_some(Session { email, groups })
}

/// A verified session: the signed-in user's encoded e-mail and groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Session<'a> {
    pub email: &'a [u8],
    groups: &'a [u8],
}

impl Session<'_> {
    /// Whether the user is in `group` (encoded, `encode`).
    #[inline]
    pub fn in_group(&self, group: &[u8]) -> bool {
        !self.groups.is_empty() && self.groups.split(|&b| b == b':').any(|g| g == group)
    }

    /// Whether the user's e-mail is at `domain` (lowercase), exactly: `example.com` is not `sub.example.com`.
    #[inline]
    pub fn at_domain(&self, domain: &[u8]) -> bool {
        match self.email.iter().rposition(|&b| b == b'@') {
            Some(at) => self.email[at + 1..].eq_ignore_ascii_case(domain),
            None => false,
        }
    }
}

/// The value of the `hs_session` cookie in one `Cookie` header (`a=1; hs_session=...; b=2`), if it is there.
#[inline]
pub fn from_cookie_header(h: &[u8]) -> Option<&[u8]> {
    h.split(|&b| b == b';').find_map(|pair| {
        let pair = pair.trim_ascii();
        let rest = pair.strip_prefix(COOKIE)?;
        rest.strip_prefix(b"=")
    })
}

/// A value (an e-mail, a group) as the cookie carries it (see the contract at the top).
pub fn encode(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@' | b'-') {
            out.push(b);
        } else {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const K1: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="; // 32 bytes
    const K2: &str = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA="; // 32 bytes

    fn mint(keys: &Keys, exp: i64, email: &str, groups: &[&str]) -> Vec<u8> {
        let g: Vec<Vec<u8>> = groups.iter().map(|g| encode(g)).collect();
        let body = format!(
            "1|{exp}|{}|{}",
            String::from_utf8(encode(email)).unwrap(),
            String::from_utf8(g.join(&b':')).unwrap()
        );
        format!("{body}|{}", keys.sign(body.as_bytes())).into_bytes()
    }

    #[test]
    fn good_cookies_verify_and_bad_ones_never_do() {
        let k = Keys::parse(K1).unwrap();
        let c = mint(&k, 1000, "Jane@Example.com", &["eng", "Team A"]);
        let s = k.verify(&c, 999).expect("good");
        assert!(s.in_group(b"eng") && s.in_group(&encode("Team A")) && !s.in_group(b"Team"));
        assert!(s.at_domain(b"example.com") && !s.at_domain(b"ample.com"));
        assert_eq!(k.verify(&c, 1000), None, "expired at exp");
        let mut t = c.clone();
        t[2] = b'9'; // a later expiry
        assert_eq!(k.verify(&t, 999), None, "tampered");
        let other = Keys::parse(K2).unwrap();
        assert_eq!(other.verify(&c, 999), None, "another key");
        let both = Keys::parse(&format!("{K2}\n{K1}\n")).unwrap();
        assert!(both.verify(&c, 999).is_some(), "the previous key is accepted");
        for bad in [&b""[..], b"|", b"1|5|a|b|", b"1|5|a|b|!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"] {
            assert_eq!(k.verify(bad, 0), None);
        }
        let huge = vec![b'a'; MAX_VALUE + 1];
        assert_eq!(k.verify(&huge, 0), None);
    }

    #[test]
    fn keys_files_and_cookie_headers() {
        assert!(Keys::parse("").is_err());
        assert!(Keys::parse(&format!("{K1}\n{K2}\n{K1}")).is_err(), "three keys");
        let e = Keys::parse("c2hvcnQ=").unwrap_err();
        assert!(e.contains("line 1") && e.contains("32 to 64"), "{e}");
        assert!(!format!("{:?}", Keys::parse(K1).unwrap()).contains(K1));
        assert_eq!(from_cookie_header(b"a=1; hs_session=xyz; b=2"), Some(&b"xyz"[..]));
        assert_eq!(from_cookie_header(b"hs_session=xyz"), Some(&b"xyz"[..]));
        assert_eq!(from_cookie_header(b"hs_sessionx=1; a=2"), None);
        assert_eq!(encode("a b|c:d%"), b"a%20b%7Cc%3Ad%25");
    }
}
