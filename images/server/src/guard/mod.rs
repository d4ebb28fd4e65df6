//! Access rules (issue 44): who may see which paths of a site. The contract, shared with the operator through
//! the site value's `access` field (docs/design/site-value.md, docs/security.md):
//!
//! - **Rules by path prefix** (`access.rules[] {pathPrefix, allow?, deny?, basicAuth?}`): a prefix covers the
//!   path itself and everything under it, segment by segment (`/docs` covers `/docs` and `/docs/a`, not
//!   `/docs.html` nor `/docsx`); the longest prefix that covers a request's path decides, alone (a rule for
//!   `/docs/public/` with no conditions opens that part of a locked `/docs/`). The path is the normalised one
//!   (answer/path.rs: percent-decoded, dot segments resolved), so `/%64ocs/` and `/x/../docs/` are `/docs/`.
//! - **Addresses** (`allow`, `deny`: CIDR blocks, IPv4 and IPv6; cidr.rs): a client in any `deny` block gets 403;
//!   else, when `allow` is not empty, a client in none of its blocks gets 403. Deny wins. An empty `allow` allows
//!   every address not denied. A request whose client is unknown (no peer address) is refused by any rule that
//!   names addresses.
//! - **Basic authentication** (`basicAuth {realm}`; basic.rs): the user and password must match a bcrypt line of
//!   the site's htpasswd file (`access.htpasswdFile`, read with the site value; a relative name is beside the site
//!   value file, which is how the operator's projected volume delivers a Secret next to the ConfigMap). Without
//!   them: 401 with `WWW-Authenticate: Basic realm="..."`. Addresses are checked first: a denied client gets 403
//!   whatever it sends.
//! - **Single sign-on** (`signIn {groups?, emailDomains?}`; session.rs, docs/design/sso.md): the request must
//!   carry a good `hs_session` cookie (signed with a key of `access.sso.keysFile`, not expired); the user must
//!   then be in one of `groups` or have an e-mail at one of `emailDomains` (both empty: any signed-in user).
//!   Without a good cookie a navigation is redirected (302) to `access.sso.loginURL` with `rd` naming the page,
//!   anything else gets 401; a signed-in user the rule does not admit gets 403 (never a redirect: no loop).
//! - **The client** (forwarded.rs): the peer's address (or the PROXY protocol source), or, from a peer in
//!   `access.trustedProxies`, the right-most untrusted `X-Forwarded-For` entry. The same address is the one the
//!   per-client limits charge and the access log names.
//! - **What a refused client learns**: nothing about the content. The rules are decided before the path is looked
//!   up, so a protected path's 401 or 403 is the same whether a file exists there or not.
//! - **Shared caches**: every response to a request under a rule (200, 304, 206, redirects, 404, 401, 403) carries
//!   `Cache-Control: private`; a file under a rule has its configured value made private at load (`public` and
//!   `s-maxage` dropped, `private` first), and the CDN-only headers (`CDN-Cache-Control`, `Surrogate-Control`)
//!   are not sent.
//! - **Cost**: the rules are a short list scanned per request (a prefix compare each); the bcrypt check runs on
//!   a worker's cache miss only (verified.rs): a logged-in client's requests cost a keyed hash and a compare.

pub mod basic;
pub mod cidr;
pub mod forwarded;
pub mod session;
pub mod verified;

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

pub use basic::Users;
pub use cidr::Cidr;
pub use verified::Verified;

/// The largest htpasswd file read (a ConfigMap or Secret holds at most 1 MiB).
pub const MAX_HTPASSWD_BYTES: u64 = 1 << 20;

/// A site's access settings: the `access` field of its site value.
#[derive(Debug, Clone)]
pub struct Access {
    /// Names this load of the settings in the workers' caches (verified.rs): a new value, or new credentials,
    /// is never answered from verdicts about the old ones.
    pub id: u64,
    /// Longest prefix first, so the first that covers a path is the longest.
    pub rules: Vec<Rule>,
    pub trusted_proxies: Vec<Cidr>,
    /// `htpasswdFile` as written; its users once read (`load_users`).
    pub htpasswd_file: Option<String>,
    pub users: Option<Users>,
    /// `sso`: where to sign in and the session keys, for the rules with `signIn`.
    pub sso: Option<Sso>,
}

/// `access.sso`: the content agent's login URL and the keys its session cookies are signed with (session.rs).
#[derive(Debug, Clone, PartialEq)]
pub struct Sso {
    /// A site path (`/.hyperstatic/sso/login`) or an absolute http(s) URL; the redirect appends `rd`.
    pub login_url: String,
    /// The `WWW-Authenticate` value of a non-navigation's 401: `Session login="<login_url>"`.
    pub challenge: String,
    /// `keysFile` as written; its keys once read (`load_files`).
    pub keys_file: String,
    pub keys: Option<session::Keys>,
}

/// A rule's `signIn`: who of the signed-in users it admits, their groups and e-mail domains encoded as the
/// cookie carries them (session.rs). Both empty: any signed-in user.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SignIn {
    pub groups: Vec<Vec<u8>>,
    pub email_domains: Vec<Vec<u8>>,
}

impl SignIn {
    #[inline]
    fn admits(&self, s: &session::Session) -> bool {
        (self.groups.is_empty() && self.email_domains.is_empty())
            || self.groups.iter().any(|g| s.in_group(g))
            || self.email_domains.iter().any(|d| s.at_domain(d))
    }
}

impl PartialEq for Access {
    fn eq(&self, o: &Access) -> bool {
        (&self.rules, &self.trusted_proxies, &self.htpasswd_file, &self.users, &self.sso)
            == (&o.rules, &o.trusted_proxies, &o.htpasswd_file, &o.users, &o.sso)
    }
}

/// One rule: a path prefix and its conditions.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Starts with `/`; a trailing `/` is dropped at parse (`/docs/` and `/docs` cover the same paths).
    pub prefix: String,
    pub allow: Vec<Cidr>,
    pub deny: Vec<Cidr>,
    /// The `WWW-Authenticate` value, when the rule asks for basic authentication.
    pub challenge: Option<String>,
    /// `signIn`: the rule asks for a single sign-on session.
    pub sign_in: Option<SignIn>,
}

/// What a request gets from the rules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict<'a> {
    /// No rule covers the path.
    Public,
    /// A rule covers it and lets the request through: answered as usual, privately.
    Private,
    /// 403.
    Forbidden,
    /// 401 with this `WWW-Authenticate` value.
    Unauthorized(&'a str),
    /// No good session cookie under a `signIn` rule: a navigation is sent to the login, anything else gets 401.
    SignIn(&'a Sso),
    /// Signed in, but not in a group or domain the rule admits: 403 (never a redirect, which would loop).
    NotAdmitted,
}

/// The client of a request to a site with `access` (None: no settings, the peer) from `peer`, `xff` giving the
/// last `X-Forwarded-For` line: what the rules, the per-client limits and the access log use (forwarded.rs). The
/// header is looked for only when the site trusts some proxy (an HTTP/2 or HTTP/3 head is searched for it).
#[inline]
pub fn client<'a>(
    access: Option<&Access>,
    peer: Option<SocketAddr>,
    xff: impl FnOnce() -> Option<&'a [u8]>,
) -> Option<SocketAddr> {
    match access {
        Some(a) if !a.trusted_proxies.is_empty() => forwarded::client(&a.trusted_proxies, peer, xff()),
        _ => peer,
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Whether `prefix` (no trailing `/`, or exactly `/`) covers `path`.
#[inline]
fn covers(prefix: &[u8], path: &[u8]) -> bool {
    path.starts_with(prefix) && (prefix == b"/" || path.len() == prefix.len() || path[prefix.len()] == b'/')
}

/// A rule's path prefix, checked: a site path with no empty, `.` or `..` segment and no control character (a
/// request path is normalised before it is compared, so such a prefix could never match). `/` alone covers all.
pub fn parse_prefix(p: &str) -> Result<String, String> {
    if !p.starts_with('/') {
        return Err(format!("{p:?}: a path prefix starts with /"));
    }
    let t = if p.len() > 1 { p.strip_suffix('/').unwrap_or(p) } else { p };
    if t.len() > 1 && t[1..].split('/').any(|s| s.is_empty() || s == "." || s == "..") {
        return Err(format!("{p:?}: a path prefix has no empty, '.' or '..' segments"));
    }
    if t.chars().any(|c| c.is_control()) {
        return Err(format!("{p:?}: a path prefix has no control characters"));
    }
    Ok(t.to_string())
}

impl Access {
    /// Settings from parsed parts; rules sorted longest prefix first.
    pub fn new(mut rules: Vec<Rule>, trusted_proxies: Vec<Cidr>, htpasswd_file: Option<String>) -> Access {
        rules.sort_by_key(|r| std::cmp::Reverse(r.prefix.len()));
        Access {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            rules,
            trusted_proxies,
            htpasswd_file,
            users: None,
            sso: None,
        }
    }

    /// Reads the files the settings name beside the site value (relative to `base`): the htpasswd file and the
    /// session keys. Errors name the file.
    pub fn load_files(&mut self, base: &Path) -> Result<(), String> {
        self.load_users(base)?;
        self.load_keys(base)
    }

    /// Reads `sso.keysFile` (relative to `base`). Errors name the file, never a key.
    pub fn load_keys(&mut self, base: &Path) -> Result<(), String> {
        use std::io::Read;
        let Some(sso) = self.sso.as_mut() else { return Ok(()) };
        let path = base.join(&sso.keys_file);
        let at = |e: String| format!("access.sso.keysFile {}: {e}", path.display());
        let f = std::fs::File::open(&path).map_err(|e| at(e.to_string()))?;
        let mut text = String::new();
        f.take(4096).read_to_string(&mut text).map_err(|e| at(e.to_string()))?;
        sso.keys = Some(session::Keys::parse(&text).map_err(at)?);
        self.id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Reads `htpasswdFile` (relative to `base`, the site value file's directory). Errors name the file.
    pub fn load_users(&mut self, base: &Path) -> Result<(), String> {
        use std::io::Read;
        let Some(name) = &self.htpasswd_file else { return Ok(()) };
        let path = base.join(name);
        let at = |e: String| format!("access.htpasswdFile {}: {e}", path.display());
        let f = std::fs::File::open(&path).map_err(|e| at(e.to_string()))?;
        let mut text = String::new();
        f.take(MAX_HTPASSWD_BYTES + 1).read_to_string(&mut text).map_err(|e| at(e.to_string()))?;
        if text.len() as u64 > MAX_HTPASSWD_BYTES {
            return Err(at(format!("larger than {MAX_HTPASSWD_BYTES} bytes")));
        }
        self.users = Some(Users::parse(&text).map_err(at)?);
        // New credentials: verdicts about the old ones no longer hold.
        self.id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The rule covering `path` (a normalised site path), if any.
    #[inline]
    pub fn rule_for(&self, path: &[u8]) -> Option<&Rule> {
        self.rules.iter().find(|r| covers(r.prefix.as_bytes(), path))
    }

    /// Whether `url` (a file's site path) is under any rule: its responses are private (headers/per_file.rs).
    pub fn protects(&self, url: &str) -> bool {
        self.rule_for(url.as_bytes()).is_some()
    }

    /// The verdict for a request for `path` (normalised) from `client` with `authorization` and the `session`
    /// cookie's value. `verified` is the worker's cache (a hit costs no hashing; a miss verifies and remembers
    /// the verdict) and clock (a session's expiry is compared with `verified.now`).
    #[inline]
    pub fn check(
        &self,
        verified: &mut Verified,
        path: &[u8],
        client: Option<IpAddr>,
        authorization: Option<&[u8]>,
        session: Option<&[u8]>,
    ) -> Verdict<'_> {
        let Some(rule) = self.rule_for(path) else { return Verdict::Public };
        if !rule.allow.is_empty() || !rule.deny.is_empty() {
            let Some(ip) = client.map(cidr::plain) else { return Verdict::Forbidden };
            if cidr::any(&rule.deny, ip) || (!rule.allow.is_empty() && !cidr::any(&rule.allow, ip)) {
                return Verdict::Forbidden;
            }
        }
        if let Some(sign_in) = &rule.sign_in {
            // The parser refuses a `signIn` rule without `sso`; a missing one admits no one.
            let Some(sso) = &self.sso else { return Verdict::Forbidden };
            let Some(s) = session.and_then(|v| self.session(sso, verified, v)) else {
                return Verdict::SignIn(sso);
            };
            return if sign_in.admits(&s) { Verdict::Private } else { Verdict::NotAdmitted };
        }
        let Some(challenge) = &rule.challenge else { return Verdict::Private };
        let Some(value) = authorization else { return Verdict::Unauthorized(challenge) };
        let good = match verified.get(self.id, value) {
            Some(g) => g,
            None => {
                verified.checked();
                let g = self.users.as_ref().is_some_and(|u| u.verify(value));
                verified.put(self.id, value, g);
                g
            }
        };
        if good {
            Verdict::Private
        } else {
            Verdict::Unauthorized(challenge)
        }
    }
}

/// Marks the worker-table entries of session cookies (guard/verified.rs) apart from those of `Authorization`
/// values under the same settings: a value found signed as a cookie must never pass as a password, nor the reverse.
const SESSION_OWNER: u64 = 1 << 63;

impl Access {
    /// The session in cookie value `v`: its MAC checked once per worker and value (a hit costs a keyed hash and a
    /// compare, no HMAC; a forged value is remembered as bad too), its expiry and fields read every time.
    #[inline]
    fn session<'a>(&self, sso: &Sso, verified: &mut Verified, v: &'a [u8]) -> Option<session::Session<'a>> {
        let keys = sso.keys.as_ref()?;
        let owner = self.id | SESSION_OWNER;
        let signed = match verified.get(owner, v) {
            Some(s) => s,
            None => {
                let s = keys.signed(v);
                verified.put(owner, v, s);
                s
            }
        };
        if signed {
            session::parse(v, verified.now)
        } else {
            None
        }
    }
}

/// A `Cache-Control` value made private: `private` first, then the value's directives but those that let a
/// shared cache store the response (`public`, `s-maxage`, `proxy-revalidate`) or that repeat `private`.
pub fn private_cache_control(v: &str) -> String {
    let mut out = String::from("private");
    for d in v.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let name = d.split('=').next().unwrap_or("").trim().to_ascii_lowercase();
        if !matches!(name.as_str(), "public" | "s-maxage" | "proxy-revalidate" | "private") {
            out.push_str(", ");
            out.push_str(d);
        }
    }
    out
}

/// Headers only shared caches and CDNs read: never sent with a protected file.
pub fn shared_cache_header(name: &str) -> bool {
    ["CDN-Cache-Control", "Surrogate-Control", "Cloudflare-CDN-Cache-Control"]
        .iter()
        .any(|h| h.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(prefix: &str, allow: &[&str], deny: &[&str], realm: Option<&str>) -> Rule {
        Rule {
            prefix: parse_prefix(prefix).unwrap(),
            allow: allow.iter().map(|c| Cidr::parse(c).unwrap()).collect(),
            deny: deny.iter().map(|c| Cidr::parse(c).unwrap()).collect(),
            challenge: realm.map(basic::challenge),
            sign_in: None,
        }
    }

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn the_longest_covering_prefix_decides_and_deny_wins() {
        let a = Access::new(
            vec![
                rule("/docs/", &["10.0.0.0/8", "2001:db8::/32"], &["10.9.0.0/16"], None),
                rule("/docs/public", &[], &[], None),
                rule("/admin", &[], &[], Some("Admins")),
            ],
            vec![],
            None,
        );
        let mut v = Verified::new();
        let mut check = |p: &str, c| a.check(&mut v, p.as_bytes(), c, None, None);
        assert_eq!(check("/", ip("192.0.2.1")), Verdict::Public);
        assert_eq!(check("/docsx", ip("192.0.2.1")), Verdict::Public, "segment-aligned");
        assert_eq!(check("/docs", ip("192.0.2.1")), Verdict::Forbidden);
        assert_eq!(check("/docs/a", ip("10.1.2.3")), Verdict::Private);
        assert_eq!(check("/docs/a", ip("::ffff:10.1.2.3")), Verdict::Private);
        assert_eq!(check("/docs/a", ip("2001:db8::1")), Verdict::Private);
        assert_eq!(check("/docs/a", ip("10.9.0.1")), Verdict::Forbidden, "deny wins over allow");
        assert_eq!(check("/docs/a", None), Verdict::Forbidden, "no address: refused");
        assert_eq!(check("/docs/public/x", ip("192.0.2.1")), Verdict::Private, "the longer prefix alone decides");
        assert!(matches!(check("/admin/x", ip("10.1.2.3")), Verdict::Unauthorized(c) if c.contains("Admins")));
        assert!(a.protects("/docs/index.html") && !a.protects("/index.html"));
    }

    #[test]
    fn credentials_are_verified_once_and_a_wrong_one_is_never_good() {
        let hash = bcrypt::hash("pw", 4).unwrap();
        let mut a = Access::new(vec![rule("/", &[], &[], Some("R"))], vec![], None);
        a.users = Some(Users::parse(&format!("u:{hash}")).unwrap());
        let mut v = Verified::new();
        let good = b"Basic dTpwdw=="; // u:pw
        let bad = b"Basic dTpwWA=="; // u:pX
        assert_eq!(a.check(&mut v, b"/x", None, Some(good), None), Verdict::Private);
        assert_eq!(v.get(a.id, good), Some(true), "remembered");
        assert!(matches!(a.check(&mut v, b"/x", None, Some(bad), None), Verdict::Unauthorized(_)));
        assert_eq!(v.get(a.id, bad), Some(false), "remembered as bad");
        assert!(matches!(a.check(&mut v, b"/x", None, Some(bad), None), Verdict::Unauthorized(_)));
        assert!(matches!(a.check(&mut v, b"/x", None, None, None), Verdict::Unauthorized(_)));
        // Without a users file the rule admits no one.
        let b = Access::new(vec![rule("/", &[], &[], Some("R"))], vec![], None);
        assert!(matches!(b.check(&mut v, b"/x", None, Some(good), None), Verdict::Unauthorized(_)));
    }

    #[test]
    fn a_session_is_checked_once_per_worker_and_never_passes_as_a_password() {
        use base64::Engine as _;
        let key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
        let keys = session::Keys::parse(&key).unwrap();
        let sign_in = SignIn { groups: vec![b"eng".to_vec()], email_domains: vec![] };
        let mut a = Access::new(
            vec![Rule { sign_in: Some(sign_in), ..rule("/team", &[], &[], None) }, rule("/basic", &[], &[], Some("R"))],
            vec![],
            None,
        );
        let login = "/login".to_string();
        a.sso = Some(Sso { login_url: login, challenge: "c".into(), keys_file: "k".into(), keys: Some(keys.clone()) });
        a.users = Some(Users::parse(&format!("u:{}", bcrypt::hash("pw", 4).unwrap())).unwrap());
        let body = "1|1000|a@example.com|eng";
        let cookie = format!("{body}|{}", keys.sign(body.as_bytes()));
        let c = Some(cookie.as_bytes());
        let mut v = Verified::new();
        v.now = 999;
        assert_eq!(a.check(&mut v, b"/team/x", None, None, c), Verdict::Private);
        assert_eq!(v.get(a.id | SESSION_OWNER, cookie.as_bytes()), Some(true), "remembered as signed");
        assert_eq!(a.check(&mut v, b"/team/x", None, None, c), Verdict::Private, "from the table");
        v.now = 1000;
        assert!(matches!(a.check(&mut v, b"/team/x", None, None, c), Verdict::SignIn(_)), "expiry read on a hit");
        assert!(matches!(a.check(&mut v, b"/basic/x", None, c, None), Verdict::Unauthorized(_)), "not a password");
        let forged = cookie.replace("|eng|", "|ops|");
        assert!(matches!(a.check(&mut v, b"/team/x", None, None, Some(forged.as_bytes())), Verdict::SignIn(_)));
        assert_eq!(v.get(a.id | SESSION_OWNER, forged.as_bytes()), Some(false), "remembered as forged");
    }

    #[test]
    fn prefixes_and_cache_control() {
        assert_eq!(parse_prefix("/docs/").unwrap(), "/docs");
        assert_eq!(parse_prefix("/").unwrap(), "/");
        for bad in ["docs", "/a//b", "/a/../b", "/./a", "/a\u{1}"] {
            assert!(parse_prefix(bad).is_err(), "{bad:?}");
        }
        assert_eq!(private_cache_control("public, max-age=600, s-maxage=3600"), "private, max-age=600");
        assert_eq!(private_cache_control("no-cache"), "private, no-cache");
        assert_eq!(private_cache_control("private"), "private");
        assert!(shared_cache_header("cdn-cache-control") && !shared_cache_header("X-A"));
    }
}
