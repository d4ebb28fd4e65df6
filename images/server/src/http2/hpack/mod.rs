//! HPACK (RFC 7541), hand-written: see the library decision in `http2/mod.rs`.

pub mod decode;
pub mod encode;
pub mod fields;
pub mod huffman;
pub mod table;

#[cfg(test)]
mod crosscheck;

pub use decode::{CompressionError, DecodeError, Decoder};
pub use fields::FieldList;
