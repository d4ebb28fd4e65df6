//! The protocol-agnostic core of answering a request: path normalisation, conditionals, ranges and CORS
//! decisions, and the file answer (`file::decide`) that says which status, variant and byte range a request for a
//! file gets. HTTP/1.1 frames these decisions (http1/respond.rs); an HTTP/2 stream can call the same functions.

pub mod conditional;
pub mod cors;
pub mod file;
pub mod path;
pub mod range;
