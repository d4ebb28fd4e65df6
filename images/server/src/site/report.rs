//! What a load found besides its table: sizes, memory, and the problems `--check` reports (site/loader.rs fills
//! it; the walk adds what it could not read).

use crate::site::memory;

#[derive(Default, Debug)]
pub struct Report {
    pub files: usize,
    pub bytes: u64,
    pub memory_bytes: u64,
    pub disk_files: usize,
    pub compressed_variants: usize,
    /// Files the background encoder will give variants (compressible, in memory, no siblings, none attached).
    pub pending_encodings: usize,
    /// Limit, budget, bytes on disk, fit limit (memory.rs).
    pub memory: memory::Summary,
    /// What the load held besides its table and content while it ran, as charged (memory.rs `Item::load`).
    pub load_bytes: u64,
    /// Problems that make `--check` fail; at serve time the files are skipped and logged.
    pub errors: Vec<String>,
    /// How many of the errors are files or directories that could not be read (dangling symlinks, I/O,
    /// permissions) as opposed to policy (escaping symlinks, names). A reload with unreadable entries is
    /// treated as a broken tree and keeps the old content.
    pub unreadable: usize,
    /// Pages the site value names that the content lacks (`notFoundPage`, `errorPages[].path`), by JSON path: a
    /// site value file that names one is refused (control.rs); the flags keep their old behaviour (listed in
    /// `errors`, the page left out).
    pub missing_pages: Vec<String>,
}
