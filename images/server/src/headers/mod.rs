//! Response headers: each file's headers decided once at load time from every source (per_file.rs: the default
//! security headers, security.rs; `--header` rules; the site's `_headers` file, site_file.rs; CORS rules, cors.rs), and the
//! precomputed header blocks a response copies (blocks.rs). Compiled from the site value (site_value/), never
//! from the process settings.

pub mod blocks;
pub mod cors;
pub mod per_file;
pub mod resolved;
pub mod security;
pub mod site_file;
