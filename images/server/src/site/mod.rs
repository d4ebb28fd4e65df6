//! The site in memory: loading the content root into a `Table` (loader.rs; opening beneath the root without
//! following symlinks, beneath.rs), what the table holds and how a path finds its entry (content.rs), the memory
//! budget that decides what stays on disk (memory.rs), what the table costs besides content (footprint.rs), the
//! share of the limit connections get (conn_budget.rs), MIME types, globs, and the last load error.

pub mod beneath;
pub mod conn_budget;
pub mod content;
pub mod entry;
pub mod footprint;
pub mod glob;
pub mod load_error;
pub mod loader;
pub mod memory;
pub mod mime;
pub mod paths;
pub mod report;
pub mod walk;
