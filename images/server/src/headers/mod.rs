//! Response headers: each file's headers decided once at load time from every source (per_file.rs: the default
//! security headers, security.rs; `--header` rules; the site's `_headers` file, site_file.rs), and the
//! precomputed header blocks a response copies (blocks.rs).

pub mod blocks;
pub mod per_file;
pub mod security;
pub mod site_file;
