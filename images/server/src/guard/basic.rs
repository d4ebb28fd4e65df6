//! Basic authentication (RFC 7617) against an htpasswd file of bcrypt hashes: parsing the file (bcrypt lines
//! only: `user:$2y$...`, as `htpasswd -B` writes them; anything else is refused naming its line
//! by number, never by content, for the file is a Secret and the message is logged; bcrypt only, since an MD5
//! `$apr1$`, SHA-1 `{SHA}` or DES crypt hash is cheap to brute-force once the file leaks), and checking one
//! `Authorization` value against it. The check is the expensive part (bcrypt at the file's cost: tens to
//! hundreds of milliseconds), so it runs only when the worker's cache of recent answers (verified.rs) has none.
//!
//! Why the `bcrypt` crate (Keats/rust-bcrypt): pure Rust (no C to cross-build into the static binary), maintained
//! for years with regular releases, constant-time comparison of the digest (`subtle`), and it reads all four
//! prefixes htpasswd and other tools write (`$2a$`, `$2b$`, `$2x$`, `$2y$`). Argon2 would be the stronger choice
//! for new systems, but Apache's `htpasswd` cannot make it, and htpasswd is what users already have.

use std::collections::HashMap;

use base64::Engine as _;

/// The highest bcrypt cost accepted: each failed attempt costs one verification at the file's cost on a worker's
/// loop (2^14 rounds is about a second of one core); a file with cost 31 would let every wrong password stall a
/// worker for hours.
pub const MAX_COST: u32 = 14;
/// The longest `Authorization` credentials decoded (`user:password` in base64): a longer value is refused unread.
pub const MAX_CREDENTIALS: usize = 256;

/// The users of an htpasswd file: name → bcrypt hash. Debug never shows a hash.
#[derive(Clone, PartialEq, Default)]
pub struct Users {
    by_name: HashMap<String, String>,
}

impl std::fmt::Debug for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Users({} bcrypt hashes)", self.by_name.len())
    }
}

impl Users {
    /// Parses htpasswd text: one `name:hash` per line, blank lines and `#` comments skipped. Errors name the line.
    pub fn parse(text: &str) -> Result<Users, String> {
        let mut by_name = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let n = i + 1;
            let (name, hash) = line.split_once(':').ok_or_else(|| format!("line {n}: expected user:hash"))?;
            if name.is_empty() || name.bytes().any(|b| b.is_ascii_control()) {
                return Err(format!("line {n}: empty or invalid user name"));
            }
            if !["$2a$", "$2b$", "$2x$", "$2y$"].iter().any(|p| hash.starts_with(p)) {
                return Err(format!("line {n}: not a bcrypt hash; only bcrypt is accepted (htpasswd -B makes one)"));
            }
            let parts: bcrypt::HashParts = hash.parse().map_err(|e| format!("line {n}: bad bcrypt hash: {e}"))?;
            if parts.get_cost() > MAX_COST {
                return Err(format!("line {n}: bcrypt cost {} is above {MAX_COST}", parts.get_cost()));
            }
            if by_name.insert(name.to_string(), hash.to_string()).is_some() {
                return Err(format!("line {n}: a user appears twice"));
            }
        }
        Ok(Users { by_name })
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Whether `authorization` (a whole `Authorization` value) names a user of the file with its password. An
    /// unknown user is refused without hashing. Off the hot path: called on a cache miss only.
    pub fn verify(&self, authorization: &[u8]) -> bool {
        let Some(token) = credentials(authorization) else { return false };
        let mut buf = [0u8; MAX_CREDENTIALS];
        let Ok(n) = base64::engine::general_purpose::STANDARD.decode_slice(token, &mut buf) else { return false };
        let pair = &buf[..n];
        let Some(colon) = pair.iter().position(|&b| b == b':') else { return false };
        let (Ok(name), password) = (std::str::from_utf8(&pair[..colon]), &pair[colon + 1..]) else { return false };
        match self.by_name.get(name) {
            Some(hash) => bcrypt::verify(password, hash).unwrap_or(false),
            None => false,
        }
    }
}

/// The token68 of a `Basic` value (the scheme is case-insensitive, RFC 7235 §2.1), if short enough to decode.
pub fn credentials(v: &[u8]) -> Option<&[u8]> {
    if v.len() < 6 || !v[..6].eq_ignore_ascii_case(b"basic ") {
        return None;
    }
    let t = v[6..].trim_ascii();
    (!t.is_empty() && t.len() <= MAX_CREDENTIALS * 4 / 3).then_some(t)
}

/// The `WWW-Authenticate` value of a realm: `Basic realm="...", charset="UTF-8"`. The realm is checked at parse
/// (json.rs): printable, no `"` or `\`.
pub fn challenge(realm: &str) -> String {
    format!("Basic realm=\"{realm}\", charset=\"UTF-8\"")
}

/// A realm is one quoted-string without escapes: printable ASCII or UTF-8 text, no `"`, `\` or controls.
pub fn valid_realm(realm: &str) -> bool {
    !realm.is_empty() && realm.len() <= 128 && !realm.chars().any(|c| c == '"' || c == '\\' || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(user_pass: &str) -> Vec<u8> {
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(user_pass)).into_bytes()
    }

    #[test]
    fn bcrypt_lines_verify_and_others_are_refused_by_line() {
        // Cost 4, the lowest: unit tests should not spend seconds hashing.
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let u = Users::parse(&format!("# team\n\nalice:{hash}\n")).unwrap();
        assert_eq!(u.len(), 1);
        assert!(u.verify(&basic("alice:s3cret")));
        assert!(u.verify(&[b"bAsIc  ".as_slice(), &basic("alice:s3cret")[6..]].concat()), "scheme any case");
        assert!(!u.verify(&basic("alice:wrong")));
        assert!(!u.verify(&basic("bob:s3cret")));
        assert!(!u.verify(&basic("alice")));
        assert!(!u.verify(b"Bearer abc"));
        assert!(!u.verify(b"Basic !!!!"));
        assert!(!u.verify(&basic(&format!("alice:{}", "x".repeat(1000)))), "too long: refused unread");
        assert!(!format!("{u:?}").contains("$2"), "Debug shows no hash");
        for (text, why) in [
            ("bob:$apr1$abc$def", "line 1: not a bcrypt hash"),
            ("\ncarol:{SHA}abc=", "line 2: not a bcrypt hash"),
            ("dave:xyzzy", "not a bcrypt hash"),
            ("nocolon", "line 1: expected user:hash"),
            ("erin:$2y$10$short", "bad bcrypt hash"),
            ("frank:$2y$15$L6Bc/AlTQHyd9liGgGEZyOFLPHNgyxeEPfgYfBCVxJ7JIlwxyVU3u", "cost 15 is above 14"),
        ] {
            let e = Users::parse(text).unwrap_err();
            assert!(e.contains(why), "{text:?}: {e}");
        }
        let twice = format!("alice:{hash}\nalice:{hash}\n");
        assert!(Users::parse(&twice).unwrap_err().contains("line 2: a user appears twice"));
    }

    #[test]
    fn realms() {
        assert!(valid_realm("Team docs"));
        assert!(!valid_realm("a\"b") && !valid_realm("a\\b") && !valid_realm("") && !valid_realm("a\nb"));
        assert_eq!(challenge("x"), "Basic realm=\"x\", charset=\"UTF-8\"");
    }
}
