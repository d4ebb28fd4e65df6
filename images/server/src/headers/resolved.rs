//! The headers decided for one file at load time (per_file.rs decides them): kept in its table entry to rebuild
//! the entry's blocks when encodings arrive. A leaf: the content table holds it without depending on how it is
//! decided.

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resolved {
    pub cache_control: String,
    /// Replaces the guessed Content-Type.
    pub content_type: Option<String>,
    /// Every other header, in order.
    pub extra: Vec<(String, String)>,
    /// The file's CORS rule (index into `SiteValue::cors` and `Table::cors`).
    pub cors: Option<u16>,
}
