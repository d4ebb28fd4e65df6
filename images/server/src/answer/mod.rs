//! The protocol-agnostic core of answering a request: `request::answer` turns a request (`Ask`) into one
//! response description (`reply::Reply`: status, the header fields decided, the body's source) that every
//! protocol frames without deciding anything again (HTTP/1.1 in http1/frame.rs; HTTP/2 next). Its parts: path
//! normalisation, conditionals, ranges, and the file answer (`file::decide`: which status, variant and
//! byte range a request for a file gets), the fair-share check before it (`limit`), and skew protection's answer
//! from a previous deploy on the not-found path (`stale`).

pub mod conditional;
pub mod file;
pub mod limit;
pub mod path;
pub mod range;
pub mod reply;
pub mod request;
pub mod rule;
pub mod stale;
