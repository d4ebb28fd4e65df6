//! HTTP/1.1: bytes in, requests out (parser.rs); answers framed as HTTP/1.1 bytes into the worker's batch
//! (respond.rs asks the core, frame.rs writes its reply, out.rs). Nothing here does IO: the server module reads into the buffer the parser looks at and
//! writes the batch `out` builds.

pub mod frame;
pub mod out;
pub mod parser;
pub mod respond;
