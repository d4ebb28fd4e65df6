//! The site value (issue 39): everything that decides what a request gets — cache-control, extra headers, the
//! security headers, CORS, the SPA fallback, the 404 page, redirects, clean URLs, error pages, the HTTPS redirect
//! and HSTS — as one value, apart from the process settings (`config`: listeners, workers, timeouts, memory,
//! TLS files). The contract, shared with the operator, is docs/design/site-value.md; in short:
//!
//! - **The file** (`--site FILE`) is one JSON object, `version` 1, every other field optional (its default when
//!   absent). An unknown field is refused, and every error names its JSON path (`redirects[2].status: ...`), so a
//!   typo never becomes a rule silently missing (json.rs).
//! - **The flags** (`--redirect`, `--header`, ...) build the same value for people who run the server alone
//!   (flags.rs); giving both is a usage error. Each entry of the file is checked by the flag's own parser (rules.rs,
//!   rules/, headers/cors.rs), so a rule is refused with the same message whichever way it came.
//! - **The revision** names the value served: `sha256:` and the first 16 hex digits of the SHA-256 of the file's
//!   bytes, or of the canonical rendering (canonical.rs) when the flags built it.
//! - **Limits** (`limits.perClient`, `limits.perClientHandshakes`, fairshare/): only in the file; each number is
//!   checked against its range and a bad one named by its path, like every other field.
//! - **Access** (`access {rules, trustedProxies, htpasswdFile}`, guard/): only in the file; a relative
//!   `htpasswdFile` is read from the value file's directory when the value is read, and a bad or missing one
//!   refuses the value (the last good one keeps serving), as a bad rule does.
//! - **Against the process and the content**: `httpsRedirect`, `hsts` and `limits.perClientHandshakes` need a TLS
//!   listener (`check_process`); a `notFoundPage` or `errorPages[].path` the content lacks refuses the value at
//!   load (site/loader.rs), and the last good (content, value) keeps serving (control.rs).
//!
//! - **Skew protection** (`skewProtection {window}`, skew/): only in the file; the window is a duration (`90m`,
//!   `1h30m`, `3600s`) of 1 s to 7 days, else the value is refused.
//!
//! What this module holds is the checked value; the content table compiles it (rules/, headers/) when it loads.

mod canonical;
mod flags;
mod json;
pub mod rules;
pub mod status;

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use sha2::{Digest as _, Sha256};

pub use flags::RuleTexts;
pub use rules::{parse_cache_rule, parse_header_rule, parse_hsts, site_path, CacheRule, HeaderRule};

/// The largest site value file read: a ConfigMap holds at most 1 MiB, and a value is a few KiB; a bigger file is
/// refused before it is parsed (memory stays bounded whatever the file holds).
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// One checked site value. Field by field the contract's table; defaults as `Default` has them.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteValue {
    /// `cacheControl[]`: first match wins.
    pub cache_control: Vec<CacheRule>,
    /// `defaultCacheControl`.
    pub default_cache_control: String,
    /// `headers[]`: extra headers on file responses.
    pub headers: Vec<HeaderRule>,
    /// `securityHeaders`: the default set of headers/security.rs on every file response.
    pub security_headers: bool,
    /// `cors[]`: first match per file.
    pub cors: Vec<crate::headers::cors::CorsRule>,
    /// `spaFallback`.
    pub spa_fallback: bool,
    /// `notFoundPage`: always starts with `/`.
    pub not_found_page: Option<String>,
    /// `redirects[]`: ahead of the site's own `_redirects`.
    pub redirects: Vec<crate::rules::Rule>,
    /// `cleanURLs`.
    pub clean_urls: bool,
    /// `errorPages[]`.
    pub error_pages: Vec<crate::rules::ErrorPage>,
    /// `httpsRedirect.port`: the port in the Location, or None when the plain port serves content.
    pub https_redirect: Option<u16>,
    /// `hsts`: the Strict-Transport-Security value for HTTPS responses.
    pub hsts: Option<String>,
    /// `limits.perClient`: each client address's token bucket on this site's requests (fairshare/); None: off.
    /// Only the file sets it (no flag): a server run alone has no one else to share with.
    pub per_client: Option<crate::fairshare::Rate>,
    /// `limits.perClientHandshakes`: each client address's token bucket on this site's TLS handshakes
    /// (fairshare/handshake.rs), taken when the connection is accepted; None: off. Needs a TLS listener.
    pub per_client_handshakes: Option<crate::fairshare::Rate>,
    /// `access`: path rules (addresses, basic authentication), trusted proxies, the htpasswd file (guard/).
    /// Only the file sets it; its users are read by `read`, beside the value file.
    pub access: Option<Arc<crate::guard::Access>>,
    /// `skewProtection.window` in seconds (1 to 7 days): for this long after a deploy stopped being served, a
    /// request the current tree has no file for may be answered from it (skew/, answer/stale.rs); None: off.
    /// Only the file sets it.
    pub skew_window: Option<u64>,
}

impl Default for SiteValue {
    fn default() -> Self {
        SiteValue {
            cache_control: Vec::new(),
            default_cache_control: "no-cache".into(),
            headers: Vec::new(),
            security_headers: true,
            cors: Vec::new(),
            spa_fallback: false,
            not_found_page: None,
            redirects: Vec::new(),
            clean_urls: false,
            error_pages: Vec::new(),
            https_redirect: None,
            hsts: None,
            per_client: None,
            per_client_handshakes: None,
            access: None,
            skew_window: None,
        }
    }
}

/// A value and the revision that names it.
#[derive(Debug, Clone, PartialEq)]
pub struct Revised {
    pub value: Arc<SiteValue>,
    pub revision: String,
}

/// `sha256:` and the first 16 hex digits of the SHA-256 of `bytes`.
pub fn revision_of(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    let hex: String = d[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

impl SiteValue {
    /// Parses and checks a site value file's bytes; errors name the JSON path.
    pub fn parse(bytes: &[u8]) -> Result<SiteValue, String> {
        json::parse(bytes)
    }

    /// Builds the value from the site-rule flags' texts; errors name the flag.
    pub fn from_flags(t: RuleTexts) -> Result<SiteValue, String> {
        flags::from_texts(t)
    }

    /// The canonical JSON rendering: the contract's field order, only fields that differ from the defaults.
    pub fn canonical(&self) -> String {
        canonical::render(self)
    }

    /// The value built from flags with its revision (of the canonical rendering).
    pub fn revised(self) -> Revised {
        let revision = revision_of(self.canonical().as_bytes());
        Revised { value: Arc::new(self), revision }
    }

    /// What the process must offer the value: the HTTPS redirect and HSTS need a TLS listener (a redirect in front
    /// of a proxy that terminates TLS and forwards to the plain port would loop).
    pub fn check_process(&self, tls: bool) -> Result<(), String> {
        if tls {
            return Ok(());
        }
        if self.https_redirect.is_some() {
            return Err("httpsRedirect: needs a TLS listener (--tls-cert and --tls-key)".into());
        }
        if self.hsts.is_some() {
            return Err("hsts: needs a TLS listener (--tls-cert and --tls-key)".into());
        }
        if self.per_client_handshakes.is_some() {
            return Err("limits.perClientHandshakes: needs a TLS listener (--tls-cert and --tls-key)".into());
        }
        Ok(())
    }
}

/// Reads and checks the file at `path` (`tls`: whether the process serves HTTPS). Errors start with the path.
pub fn read(path: &Path, tls: bool) -> Result<Revised, String> {
    let at = |e: String| format!("site value {}: {e}", path.display());
    let f = std::fs::File::open(path).map_err(|e| at(e.to_string()))?;
    let mut bytes = Vec::new();
    f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| at(e.to_string()))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(at(format!("larger than {MAX_FILE_BYTES} bytes")));
    }
    let mut value = SiteValue::parse(&bytes).map_err(at)?;
    if let Some(a) = value.access.as_mut() {
        let base = path.parent().unwrap_or(Path::new("."));
        Arc::make_mut(a).load_files(base).map_err(at)?;
    }
    value.check_process(tls).map_err(at)?;
    Ok(Revised { value: Arc::new(value), revision: revision_of(&bytes) })
}

#[cfg(test)]
mod tests;
