//! The answer to a GET or HEAD of a file, decided without any protocol's framing: which encoded variant (by
//! Accept-Encoding), what the conditionals say (304, 412), which bytes a Range asks for (206, 416), and the CORS
//! line the file's rule grants the request's Origin; `reply` turns that into the response description
//! (answer/reply.rs) every protocol frames.

use crate::answer::conditional::{self, Conditions, Outcome};
use crate::answer::range::{self, RangeResult};
use crate::answer::reply::{Body, Head, Reply};
use crate::compress::encoding::{self, Encoding};
use crate::site::content::{FileEntry, Table, Variant};

/// The parts of a request a file answer depends on, whatever protocol carried it.
#[derive(Clone, Copy)]
pub struct FileAsk<'a> {
    /// GET rather than HEAD (a file is only asked for by these two): only a GET gets a body and has its Range
    /// honoured.
    pub get: bool,
    pub accept_encoding: Option<&'a [u8]>,
    pub conditions: Conditions<'a>,
    pub range: Option<&'a [u8]>,
    pub if_range: Option<&'a [u8]>,
    pub origin: Option<&'a [u8]>,
}

/// The status and body a file request gets.
#[derive(Clone, Copy)]
pub enum FileAnswer<'t> {
    /// 200 with the whole variant (its precomputed head; no body for HEAD).
    Whole(&'t Variant),
    /// 206 with `len` bytes of the variant from `start`.
    Part { v: &'t Variant, start: u64, len: u64 },
    /// 304 with the variant's validators.
    NotModified(&'t Variant),
    /// 412.
    PreconditionFailed,
    /// 416 (`Content-Range: bytes */len` of the variant).
    Unsatisfiable(&'t Variant),
}

/// A file answer and the `Access-Control-Allow-Origin` line it carries, if the file's CORS rule lists the
/// request's Origin (`*` rules have theirs in the header block already).
#[derive(Clone, Copy)]
pub struct FileReply<'t> {
    pub answer: FileAnswer<'t>,
    pub cors: Option<&'t [u8]>,
}

/// Decides the answer to `ask` for file `e` of `table`. Allocates nothing.
#[inline]
pub fn decide<'t>(table: &'t Table, ask: &FileAsk, e: &'t FileEntry) -> FileReply<'t> {
    // The file's headers are read only for a request with an Origin: they sit behind one more pointer, a cache
    // miss per request where a pool's hot files outgrow the CPU's caches.
    let cors = match ask.origin {
        Some(origin) => e.headers.cors.and_then(|i| table.cors[i as usize].allow_line(origin)),
        None => None,
    };
    let enc = if e.negotiable() { encoding::negotiate(ask.accept_encoding, e.available()) } else { Encoding::Identity };
    let v = e.variant(enc);
    let answer = match conditional::evaluate(&ask.conditions, &v.etag, e.last_modified) {
        Outcome::NotModified => FileAnswer::NotModified(v),
        Outcome::PreconditionFailed => FileAnswer::PreconditionFailed,
        Outcome::Proceed => match ask.range {
            Some(r) if ask.get && conditional::if_range_allows(ask.if_range, &v.etag, e.last_modified) => {
                match range::evaluate(r, v.len) {
                    RangeResult::Full => FileAnswer::Whole(v),
                    RangeResult::Partial { start, end } => FileAnswer::Part { v, start, len: end - start + 1 },
                    RangeResult::Unsatisfiable => FileAnswer::Unsatisfiable(v),
                }
            }
            _ => FileAnswer::Whole(v),
        },
    };
    FileReply { answer, cors }
}

/// The response description of `decide`'s answer: status, header kind, body (none for HEAD).
#[inline]
pub fn reply<'t>(table: &'t Table, ask: &FileAsk, e: &'t FileEntry) -> Reply<'t> {
    let FileReply { answer, cors } = decide(table, ask, e);
    match answer {
        FileAnswer::Whole(v) => {
            let body = if ask.get { Body::Variant { v, start: 0, len: v.len } } else { Body::None };
            Reply { private: false, status: 200, head: Head::File { v, cors }, body }
        }
        FileAnswer::Part { v, start, len } => Reply {
            private: false,
            status: 206,
            head: Head::Part { v, start, len, cors },
            body: Body::Variant { v, start, len },
        },
        FileAnswer::NotModified(v) => {
            Reply { private: false, status: 304, head: Head::NotModified { v, cors }, body: Body::None }
        }
        FileAnswer::PreconditionFailed => Reply::plain(412, false, !ask.get),
        FileAnswer::Unsatisfiable(v) => Reply {
            private: false,
            status: 416,
            head: Head::Unsatisfiable { len: v.len, vary: e.negotiable() },
            body: Body::None,
        },
    }
}
