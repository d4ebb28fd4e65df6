//! QPACK (RFC 9204) with the static table only: we advertise a dynamic table capacity of 0 and no blocked
//! streams, so request heads decode without state (`decode`), response heads encode once at load time
//! (`encode`), and the client's encoder and decoder streams carry nothing we need (`streams`). Huffman strings
//! and prefixed integers are HPACK's, called in place from `http2::hpack` (the move to a module both protocols
//! share is in docs/design/http3.md).

pub mod decode;
pub mod encode;
pub mod streams;
pub mod table;

#[cfg(test)]
mod crosscheck;

pub use decode::{decode, DecodeError};
