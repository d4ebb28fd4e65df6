//! The site value file: JSON in, a checked `SiteValue` out. Walked by hand over `serde_json::Value` rather than
//! derived, so that every error names its JSON path (`redirects[2].status: ...`, `cors[0].form: unknown field`)
//! — serde's own errors say a line and column, which a ConfigMap rendered by the operator does not help with.
//! Each entry is put back into its flag's text and checked by the flag's parser: one set of rules, one set of
//! messages (the entry's path first).

use serde_json::{Map, Value};

use super::rules::{parse_cache_rule, parse_header_rule, parse_hsts, site_path};
use super::SiteValue;

const FIELDS: [&str; 16] = [
    "version",
    "cacheControl",
    "defaultCacheControl",
    "headers",
    "securityHeaders",
    "cors",
    "spaFallback",
    "notFoundPage",
    "redirects",
    "cleanURLs",
    "errorPages",
    "httpsRedirect",
    "hsts",
    "limits",
    "access",
    "skewProtection",
];

/// The only version this server reads.
pub const VERSION: u64 = 1;

/// An object at a JSON path, its fields read by name.
struct Obj<'a> {
    map: &'a Map<String, Value>,
    path: String,
}

fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

impl<'a> Obj<'a> {
    fn new(v: &'a Value, path: String, allowed: &[&str]) -> Result<Obj<'a>, String> {
        let map = v.as_object().ok_or_else(|| format!("{}: expected an object", display(&path)))?;
        if let Some(k) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(format!("{}: unknown field", join(&path, k)));
        }
        Ok(Obj { map, path })
    }

    fn at(&self, key: &str) -> String {
        join(&self.path, key)
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    fn string(&self, key: &str) -> Result<Option<&'a str>, String> {
        self.get(key).map(|v| v.as_str().ok_or_else(|| format!("{}: expected a string", self.at(key)))).transpose()
    }

    fn required_string(&self, key: &str) -> Result<&'a str, String> {
        self.string(key)?.ok_or_else(|| format!("{}: required", self.at(key)))
    }

    fn boolean(&self, key: &str) -> Result<Option<bool>, String> {
        self.get(key)
            .map(|v| v.as_bool().ok_or_else(|| format!("{}: expected true or false", self.at(key))))
            .transpose()
    }

    fn number(&self, key: &str) -> Result<Option<u64>, String> {
        self.get(key)
            .map(|v| v.as_u64().ok_or_else(|| format!("{}: expected a non-negative integer", self.at(key))))
            .transpose()
    }

    /// The elements of an array field with their paths (none when absent).
    fn array(&self, key: &str) -> Result<Vec<(String, &'a Value)>, String> {
        let Some(v) = self.get(key) else { return Ok(Vec::new()) };
        let a = v.as_array().ok_or_else(|| format!("{}: expected an array", self.at(key)))?;
        Ok(a.iter().enumerate().map(|(i, v)| (format!("{}[{i}]", self.at(key)), v)).collect())
    }

    fn strings(&self, key: &str) -> Result<Option<Vec<&'a str>>, String> {
        if self.get(key).is_none() {
            return Ok(None);
        }
        let items = self.array(key)?;
        items
            .iter()
            .map(|(p, v)| v.as_str().ok_or_else(|| format!("{p}: expected a string")))
            .collect::<Result<_, _>>()
            .map(Some)
    }
}

fn display(path: &str) -> &str {
    if path.is_empty() {
        "the site value"
    } else {
        path
    }
}

/// A text that must stay one token of its flag's syntax: `what` may not hold any of `bad` (nor be empty).
fn plain<'a>(path: &str, v: &'a str, bad: &[char], what: &str) -> Result<&'a str, String> {
    if v.trim().is_empty() {
        return Err(format!("{path}: empty"));
    }
    match v.chars().find(|c| bad.contains(c) || (bad.contains(&' ') && c.is_whitespace())) {
        Some(c) => Err(format!("{path}: {what} cannot hold {c:?}")),
        None => Ok(v),
    }
}

/// One part of a `_redirects` line: no whitespace, and not starting with '#'.
fn token<'a>(path: &str, v: &'a str) -> Result<&'a str, String> {
    let v = plain(path, v, &[' '], "a path")?;
    if v.starts_with('#') {
        return Err(format!("{path}: a path cannot start with '#'"));
    }
    Ok(v)
}

pub(super) fn parse(bytes: &[u8]) -> Result<SiteValue, String> {
    let root: Value = serde_json::from_slice(bytes).map_err(|e| format!("invalid JSON: {e}"))?;
    let o = Obj::new(&root, String::new(), &FIELDS)?;
    match o.get("version") {
        None => return Err("version: required (1)".into()),
        Some(v) if v.as_u64() == Some(VERSION) => {}
        Some(v) => return Err(format!("version: {v} is not a version this server reads (1)")),
    }
    let d = SiteValue::default();
    let limits =
        o.get("limits").map(|v| Obj::new(v, o.at("limits"), &["perClient", "perClientHandshakes"])).transpose()?;
    Ok(SiteValue {
        cache_control: o.array("cacheControl")?.iter().map(|(p, v)| cache_rule(p, v)).collect::<Result<_, _>>()?,
        default_cache_control: o
            .string("defaultCacheControl")?
            .map_or(d.default_cache_control, |s| s.trim().to_string()),
        headers: o.array("headers")?.iter().map(|(p, v)| header_rule(p, v)).collect::<Result<_, _>>()?,
        security_headers: o.boolean("securityHeaders")?.unwrap_or(d.security_headers),
        cors: o.array("cors")?.iter().map(|(p, v)| cors_rule(p, v)).collect::<Result<_, _>>()?,
        spa_fallback: o.boolean("spaFallback")?.unwrap_or(d.spa_fallback),
        not_found_page: o.string("notFoundPage")?.and_then(site_path),
        redirects: o.array("redirects")?.iter().map(|(p, v)| redirect(p, v)).collect::<Result<_, _>>()?,
        clean_urls: o.boolean("cleanURLs")?.unwrap_or(d.clean_urls),
        error_pages: o.array("errorPages")?.iter().map(|(p, v)| error_page(p, v)).collect::<Result<_, _>>()?,
        https_redirect: match o.get("httpsRedirect") {
            None => None,
            Some(v) => {
                let r = Obj::new(v, o.at("httpsRedirect"), &["port"])?;
                let port = r.number("port")?.unwrap_or(443);
                Some(u16::try_from(port).map_err(|_| format!("{}: {port} is not a port", r.at("port")))?)
            }
        },
        hsts: o.string("hsts")?.map(|v| parse_hsts(v).map_err(|e| format!("hsts: {e}"))).transpose()?,
        per_client: limits
            .as_ref()
            .and_then(|l| l.get("perClient"))
            .map(|v| bucket(v, "perClient", "requests"))
            .transpose()?,
        per_client_handshakes: limits
            .as_ref()
            .and_then(|l| l.get("perClientHandshakes"))
            .map(|v| bucket(v, "perClientHandshakes", "handshakes"))
            .transpose()?,
        access: o.get("access").map(|v| access(v).map(std::sync::Arc::new)).transpose()?,
        skew_window: o.get("skewProtection").map(skew_protection).transpose()?,
    })
}

/// `skewProtection {window}`: the window in seconds, 1 s to 7 days (skew::MAX_WINDOW_S).
fn skew_protection(v: &Value) -> Result<u64, String> {
    let o = Obj::new(v, "skewProtection".into(), &["window"])?;
    let text = o.required_string("window")?;
    let s = window_seconds(text).ok_or_else(|| {
        format!("{}: {text:?} is not a duration (whole seconds, minutes or hours: 90s, 30m, 1h30m)", o.at("window"))
    })?;
    let max = crate::skew::MAX_WINDOW_S;
    if s == 0 || s > max {
        return Err(format!("{}: {text:?} is not between 1s and {}h (7 days)", o.at("window"), max / 3600));
    }
    Ok(s)
}

/// Seconds of a duration as Go writes one (`1h0m0s`, `90m`, `3600s`): whole numbers, each with h, m or s, in that
/// order; None for anything else (or past u64).
fn window_seconds(text: &str) -> Option<u64> {
    let (mut total, mut rest, mut units) = (0u64, text.trim(), &["h", "m", "s"][..]);
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let n = rest.bytes().take_while(u8::is_ascii_digit).count();
        let num: u64 = rest.get(..n)?.parse().ok()?;
        rest = &rest[n..];
        let i = units.iter().position(|u| rest.starts_with(u))?;
        let scale = [3600, 60, 1][3 - units.len() + i];
        total = total.checked_add(num.checked_mul(scale)?)?;
        rest = &rest[1..];
        units = &units[i + 1..];
    }
    Some(total)
}

/// `limits.perClient {requests, periodSeconds?, burst?}` and `limits.perClientHandshakes {handshakes, ...}`:
/// `count` per `periodSeconds` (default 1), `burst` saved up at most (default `count`); each within its range
/// (fairshare/bucket.rs).
fn bucket(v: &Value, name: &str, count: &str) -> Result<crate::fairshare::Rate, String> {
    use crate::fairshare::bucket::{MAX_PERIOD_S, MAX_REQUESTS};
    let o = Obj::new(v, format!("limits.{name}"), &[count, "periodSeconds", "burst"])?;
    let within = |key: &str, n: u64, max: u32| -> Result<u32, String> {
        if n == 0 || n > max as u64 {
            return Err(format!("{}: {n} is not between 1 and {max}", o.at(key)));
        }
        Ok(n as u32)
    };
    let requests = o.number(count)?.ok_or_else(|| format!("{}: required", o.at(count)))?;
    let requests = within(count, requests, MAX_REQUESTS)?;
    let period_s = within("periodSeconds", o.number("periodSeconds")?.unwrap_or(1), MAX_PERIOD_S)?;
    let burst = within("burst", o.number("burst")?.unwrap_or(requests as u64), MAX_REQUESTS)?;
    Ok(crate::fairshare::Rate { requests, period_s, burst })
}

fn cache_rule(path: &str, v: &Value) -> Result<super::CacheRule, String> {
    let o = Obj::new(v, path.to_string(), &["glob", "value"])?;
    let glob = plain(&o.at("glob"), o.required_string("glob")?, &['='], "a glob")?;
    let value = o.required_string("value")?;
    parse_cache_rule(&format!("{glob}={value}")).map_err(|e| format!("{path}: {e}"))
}

fn header_rule(path: &str, v: &Value) -> Result<super::HeaderRule, String> {
    let o = Obj::new(v, path.to_string(), &["glob", "name", "value"])?;
    let name = o.required_string("name")?;
    if !crate::headers::site_file::is_token(name) {
        return Err(format!("{}: {name:?} is not a header name", o.at("name")));
    }
    let value = o.required_string("value")?;
    let text = match o.string("glob")? {
        Some(g) => format!("{}={name}: {value}", plain(&o.at("glob"), g, &['=', ':'], "a glob")?),
        None => format!("{name}: {value}"),
    };
    parse_header_rule(&text).map_err(|e| format!("{path}: {e}"))
}

fn cors_rule(path: &str, v: &Value) -> Result<crate::headers::cors::CorsRule, String> {
    let o = Obj::new(v, path.to_string(), &["glob", "allowOrigins", "allowMethods", "allowHeaders", "maxAge"])?;
    let glob = plain(&o.at("glob"), o.required_string("glob")?, &['=', ';'], "a glob")?;
    let list = |key: &str| -> Result<Option<String>, String> {
        let Some(items) = o.strings(key)? else { return Ok(None) };
        for (i, s) in items.iter().enumerate() {
            plain(&format!("{}[{i}]", o.at(key)), s, &[',', ';'], "an entry")?;
        }
        Ok(Some(items.join(",")))
    };
    let origins = list("allowOrigins")?.ok_or_else(|| format!("{}: required", o.at("allowOrigins")))?;
    let mut text = format!("{glob}={origins}");
    if let Some(m) = list("allowMethods")? {
        text.push_str(&format!(";methods={m}"));
    }
    if let Some(h) = list("allowHeaders")? {
        text.push_str(&format!(";headers={h}"));
    }
    if let Some(s) = o.number("maxAge")? {
        text.push_str(&format!(";max-age={s}"));
    }
    crate::headers::cors::parse_rule(&text).map_err(|e| format!("{path}: {e}"))
}

fn redirect(path: &str, v: &Value) -> Result<crate::rules::Rule, String> {
    let o = Obj::new(v, path.to_string(), &["from", "to", "status", "force"])?;
    // The rule goes through the `_redirects` line parser, where whitespace separates the parts and a part that
    // starts with '#' begins a comment; a '#' inside a part is the part's (a target's fragment), as with --redirect.
    let from = token(&o.at("from"), o.required_string("from")?)?;
    let to = token(&o.at("to"), o.required_string("to")?)?;
    let status = o.number("status")?.unwrap_or(301);
    let force = if o.boolean("force")?.unwrap_or(false) { "!" } else { "" };
    let text = format!("{from} {to} {status}{force}");
    match crate::rules::parse_rule(&text, path) {
        Ok(Some(r)) => Ok(r),
        Ok(None) => Err(format!("{path}: expected from and to")),
        // The parser's message starts with the part it refuses: name that field.
        Err(e) if e.starts_with("status") || e.starts_with(&format!("{status}")) => {
            Err(format!("{}: {e}", o.at("status")))
        }
        Err(e) if e.starts_with(from) => Err(format!("{}: {e}", o.at("from"))),
        Err(e) if e.starts_with(to) => Err(format!("{}: {e}", o.at("to"))),
        Err(e) => Err(format!("{path}: {e}")),
    }
}

fn error_page(path: &str, v: &Value) -> Result<crate::rules::ErrorPage, String> {
    let o = Obj::new(v, path.to_string(), &["status", "path", "pathPrefix"])?;
    let status = o.number("status")?.ok_or_else(|| format!("{}: required", o.at("status")))?;
    let page = plain(&o.at("path"), o.required_string("path")?, &[' '], "a path")?;
    let prefix = match o.string("pathPrefix")? {
        Some(p) => plain(&o.at("pathPrefix"), p, &[' '], "a path")?,
        None => "/",
    };
    crate::rules::parse_error_page(&format!("{status} {page} {prefix}")).map_err(|e| format!("{path}: {e}"))
}

/// `access {rules[], trustedProxies[], htpasswdFile, sso}` (guard/): every CIDR, prefix and realm checked here
/// and named by its path; a rule asking for basic authentication needs the file, one asking to sign in `sso`.
fn access(v: &Value) -> Result<crate::guard::Access, String> {
    use crate::guard::{self, Cidr};
    let o = Obj::new(v, "access".into(), &["rules", "trustedProxies", "htpasswdFile", "sso"])?;
    let sso = o.get("sso").map(|v| sso(&o.at("sso"), v)).transpose()?;
    let cidrs = |o: &Obj, key: &str| -> Result<Vec<Cidr>, String> {
        o.array(key)?
            .iter()
            .map(|(p, v)| {
                let s = v.as_str().ok_or_else(|| format!("{p}: expected a string"))?;
                Cidr::parse(s.trim()).map_err(|e| format!("{p}: {e}"))
            })
            .collect()
    };
    let file = o.string("htpasswdFile")?.map(|f| plain(&o.at("htpasswdFile"), f, &[], "a file name")).transpose()?;
    let mut rules = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (p, v) in o.array("rules")? {
        let r = Obj::new(v, p.clone(), &["pathPrefix", "allow", "deny", "basicAuth", "signIn"])?;
        let prefix = guard::parse_prefix(r.required_string("pathPrefix")?)
            .map_err(|e| format!("{}: {e}", r.at("pathPrefix")))?;
        if !seen.insert(prefix.clone()) {
            return Err(format!("{}: {prefix:?} has a rule already", r.at("pathPrefix")));
        }
        let challenge = match r.get("basicAuth") {
            None => None,
            Some(b) => {
                let b = Obj::new(b, r.at("basicAuth"), &["realm"])?;
                let realm = b.string("realm")?.unwrap_or("Restricted");
                if !guard::basic::valid_realm(realm) {
                    return Err(format!(
                        "{}: {realm:?} is not a realm (1 to 128 characters, no '\"', '\\' or controls)",
                        b.at("realm")
                    ));
                }
                if file.is_none() {
                    return Err(format!("{}: needs access.htpasswdFile", r.at("basicAuth")));
                }
                Some(guard::basic::challenge(realm))
            }
        };
        let sign_in = r.get("signIn").map(|v| sign_in(&r.at("signIn"), v)).transpose()?;
        if sign_in.is_some() && challenge.is_some() {
            return Err(format!("{}: a rule asks for basicAuth or signIn, not both", r.at("signIn")));
        }
        if sign_in.is_some() && sso.is_none() {
            return Err(format!("{}: needs access.sso", r.at("signIn")));
        }
        rules.push(guard::Rule { prefix, allow: cidrs(&r, "allow")?, deny: cidrs(&r, "deny")?, challenge, sign_in });
    }
    let mut a = guard::Access::new(rules, cidrs(&o, "trustedProxies")?, file.map(str::to_string));
    a.sso = sso;
    Ok(a)
}

/// `access.sso {loginURL, keysFile}` (guard/session.rs, docs/design/sso.md). The login URL goes into a Location
/// and a `WWW-Authenticate` quoted string: a site path (not `//`, which is another host) or an absolute http(s)
/// URL, printable ASCII without `"`, `\` or `#`, at most 512 bytes.
fn sso(path: &str, v: &Value) -> Result<crate::guard::Sso, String> {
    let o = Obj::new(v, path.to_string(), &["loginURL", "keysFile"])?;
    let url = o.required_string("loginURL")?;
    let site_path = url.starts_with('/') && !url.starts_with("//") && !url.starts_with("/\\");
    let absolute = url.starts_with("https://") || url.starts_with("http://");
    if !(site_path || absolute)
        || url.len() > 512
        || !url.bytes().all(|b| (0x21..0x7f).contains(&b) && !matches!(b, b'"' | b'\\' | b'#'))
    {
        return Err(format!(
            "{}: {url:?} is not a login URL (a site path or an http(s) URL, printable ASCII without '\"', '\\' \
             or '#', at most 512 bytes)",
            o.at("loginURL")
        ));
    }
    let keys_file = plain(&o.at("keysFile"), o.required_string("keysFile")?, &[], "a file name")?;
    Ok(crate::guard::Sso {
        login_url: url.to_string(),
        challenge: format!("Session login=\"{url}\""),
        keys_file: keys_file.to_string(),
        keys: None,
    })
}

/// A rule's `signIn {groups[], emailDomains[]}`: groups as the IdP names them (any text up to 256 bytes), e-mail
/// domains as host names (lowercased; `example.com`, not `@example.com`).
fn sign_in(path: &str, v: &Value) -> Result<crate::guard::SignIn, String> {
    use crate::guard::session::encode;
    let o = Obj::new(v, path.to_string(), &["groups", "emailDomains"])?;
    let mut s = crate::guard::SignIn::default();
    for (p, g) in o.array("groups")? {
        let g = g.as_str().ok_or_else(|| format!("{p}: expected a string"))?;
        if g.is_empty() || g.len() > 256 {
            return Err(format!("{p}: a group is 1 to 256 bytes"));
        }
        s.groups.push(encode(g));
    }
    for (p, d) in o.array("emailDomains")? {
        let d = d.as_str().ok_or_else(|| format!("{p}: expected a string"))?.to_ascii_lowercase();
        let ok = |b: u8| b.is_ascii_alphanumeric() || b == b'.' || b == b'-';
        if d.is_empty() || d.len() > 253 || !d.bytes().all(ok) || d.starts_with('.') || d.ends_with('.') {
            return Err(format!("{p}: {d:?} is not a domain (letters, digits, '.' and '-': example.com)"));
        }
        s.email_domains.push(d.into_bytes());
    }
    Ok(s)
}
