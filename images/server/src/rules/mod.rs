//! Site rules, compiled from the site value (site_value/) when the site is loaded and carried in its content table: redirects and rewrites
//! (`--redirect` flags from `spec.server.redirects`, then the site's own `_redirects` file; first match wins),
//! clean URLs (`--clean-urls`), which missing paths count as page navigations (the SPA fallback) and error pages
//! per status and path prefix (`--error-page`). A bad rule fails the load: at start the server does not start,
//! on a reload the previous content keeps serving (control.rs), and the message names the file and line.

mod clean;
mod error_pages;
mod install;
mod matcher;
mod navigation;
mod parse;
mod target;

pub use clean::apply as clean_urls;
pub use error_pages::{parse_error_page, ErrorPage};
pub use install::install;
pub use matcher::{Captures, Matcher};
pub use navigation::{is_navigation, prefers_html};
pub use parse::{parse_file, parse_rule, Piece, Rule, Seg};
pub use target::{rewrite_path, write_location};

/// The rules file at the content root. It is configuration, never served.
pub const REDIRECTS_FILE: &str = "/_redirects";
/// Most rules a site may have (flags and file together): the trie is small, but a runaway generator is not a site.
pub const MAX_RULES: usize = 100_000;

#[derive(Default, Clone, Debug)]
#[repr(C)]
pub struct Site {
    /// Only the forced (`!`) rules: consulted before the file lookup, by every request (first: the content
    /// table places it in the cache line it reads for every request, site/content.rs).
    forced: Matcher,
    rules: Vec<Rule>,
    /// Every rule: consulted when no file matches.
    all: Matcher,
    /// `Target::Moved`'s canonical Location (percent-encoded) and the file it names (clean URLs).
    pub moved: Vec<(Box<[u8]>, u32)>,
    /// (status, path prefix, entry): longest prefix first.
    error_pages: Vec<(u16, Box<[u8]>, u32)>,
}

impl Site {
    /// Where `forced` is, for the content table's layout test.
    pub const FORCED_OFFSET: usize = std::mem::offset_of!(Site, forced);
    pub const FORCED_SIZE: usize = std::mem::size_of::<Matcher>();

    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// The first forced rule matching `path`.
    #[inline]
    pub fn forced(&self, path: &[u8], caps: &mut Captures) -> Option<&Rule> {
        if self.forced.is_empty() {
            return None;
        }
        self.forced.find(path, caps).map(|i| &self.rules[i as usize])
    }

    /// The first rule matching `path` (for paths no file matches).
    #[inline]
    pub fn any(&self, path: &[u8], caps: &mut Captures) -> Option<&Rule> {
        if self.all.is_empty() {
            return None;
        }
        self.all.find(path, caps).map(|i| &self.rules[i as usize])
    }

    /// The error page for `status` whose prefix is the longest one `path` starts with.
    pub fn error_page(&self, status: u16, path: &[u8]) -> Option<u32> {
        self.error_pages.iter().find(|(s, p, _)| *s == status && path.starts_with(p)).map(|e| e.2)
    }
}
