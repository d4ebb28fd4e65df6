//! The site value built from the site-rule flags (`--cache-control`, `--header`, `--cors`, `--redirect`,
//! `--error-page`, ...): the way to give a site's rules to a server run alone. The texts arrive here as the
//! command line or the environment gave them (config.rs splits the environment's lists); errors name the flag.

use super::rules::{parse_cache_rule, parse_header_rule, parse_hsts, site_path};
use super::SiteValue;

/// The site-rule flags' values, unparsed.
#[derive(Debug, Clone, Default)]
pub struct RuleTexts {
    pub cache_control: Vec<String>,
    pub default_cache_control: String,
    pub headers: Vec<String>,
    pub security_headers: bool,
    pub cors: Vec<String>,
    pub spa_fallback: bool,
    pub not_found_page: Option<String>,
    pub redirects: Vec<String>,
    pub clean_urls: bool,
    pub error_pages: Vec<String>,
    /// `--https-redirect` with `--https-redirect-port`.
    pub https_redirect: Option<u16>,
    pub hsts: Option<String>,
}

/// `--redirect` rules, in the `_redirects` line syntax; a comment or blank value is an error (it would be a
/// rule silently missing).
fn redirect_rules(texts: &[String]) -> Result<Vec<crate::rules::Rule>, String> {
    texts
        .iter()
        .map(|t| match crate::rules::parse_rule(t, "--redirect") {
            Ok(Some(r)) => Ok(r),
            Ok(None) => Err(format!("--redirect {t:?}: expected 'FROM TO [STATUS]'")),
            Err(e) => Err(format!("--redirect {t:?}: {e}")),
        })
        .collect()
}

pub(super) fn from_texts(t: RuleTexts) -> Result<SiteValue, String> {
    Ok(SiteValue {
        cache_control: t.cache_control.iter().map(|r| parse_cache_rule(r)).collect::<Result<_, _>>()?,
        default_cache_control: t.default_cache_control.trim().to_string(),
        headers: t.headers.iter().map(|r| parse_header_rule(r)).collect::<Result<_, _>>()?,
        security_headers: t.security_headers,
        cors: t.cors.iter().map(|r| crate::headers::cors::parse_rule(r)).collect::<Result<_, _>>()?,
        spa_fallback: t.spa_fallback,
        not_found_page: t.not_found_page.as_deref().and_then(site_path),
        redirects: redirect_rules(&t.redirects)?,
        clean_urls: t.clean_urls,
        error_pages: t.error_pages.iter().map(|r| crate::rules::parse_error_page(r)).collect::<Result<_, _>>()?,
        https_redirect: t.https_redirect,
        hsts: t.hsts.as_deref().map(parse_hsts).transpose()?,
        // No flag sets a per-client limit: the site value file does (mod.rs).
        per_client: None,
        per_client_handshakes: None,
        access: None,
        skew_window: None,
    })
}
