//! HTTP/3 (RFC 9114) framing and QPACK (RFC 9204), sans-IO: bytes of one QUIC stream in, events out; response
//! heads encoded into byte blocks. Nothing here owns a socket, a clock, a QUIC connection or a thread: the QUIC
//! transport (quinn-proto, to be wired in the worker's loop; docs/design/http3.md) hands each stream's bytes, in
//! order, to the reader for that stream, and sends what the writers produce.
//!
//! # Contract
//!
//! * A client's bidirectional stream is a request: `request::RequestStream::read(bytes)` gives `Head(section)`
//!   (decode it with `qpack::decode` into an `http2::hpack::FieldList`), `HeadTooLarge` (answer 431), `Body`
//!   pieces (counted, dropped) and `Trailers`; `finish()` at the stream's FIN says whether the request was whole.
//! * A client's unidirectional stream starts with a type (`uni::TypeReader`): the control stream goes to
//!   `control::ControlStream` (SETTINGS first and once, GOAWAY, push frames checked though we never push), the
//!   QPACK encoder and decoder streams to `qpack::streams` (nothing valid to say but "capacity 0" and "cancelled",
//!   since we advertise a table of capacity 0); reserved and unknown types are stopped and forgotten. `uni::Critical`
//!   holds "one of each, never closed".
//! * Every reader takes bytes as they arrive, in pieces of any size, consumes them all (keeping at most a 16-byte
//!   frame head and one bounded payload) and returns `(used, Option<event>)`, as the HTTP/2 engine's `recv` does;
//!   a call that uses nothing and returns no event means "give me more".
//! * Errors: `error::ConnError { code, why }` closes the connection with `code` (RFC 9114 §8, RFC 9204 §6). What
//!   ends only a request is an event or value instead (`HeadTooLarge`, `qpack::DecodeError::TooLarge`: a 431;
//!   `request::End::Incomplete`: H3_REQUEST_INCOMPLETE on that stream).
//! * What we send: our control stream is `uni::CONTROL` then `settings::put_ours` (QPACK_MAX_TABLE_CAPACITY 0,
//!   QPACK_BLOCKED_STREAMS 0, SETTINGS_MAX_FIELD_SECTION_SIZE, a grease setting); we open no QPACK streams (RFC
//!   9204 §4.2 lets an endpoint whose table capacity is 0 skip them). A response is a HEADERS frame
//!   (`frame::put_head(HEADERS, len)` then the section: `qpack::encode::prefix`, the file's precomputed field
//!   lines, the per-second Date lines) and DATA frames (`frame::put_head(DATA, len)` then the body handle's
//!   bytes). `frame::put_goaway` on drain.
//!
//! # Limits, and why
//!
//! | limit | value | why |
//! | --- | --- | --- |
//! | HEADERS payload read | 16 KiB (`frame::Limits::max_headers`) | the encoded section is never larger than what it decodes to in practice; over it, skipped unread and 431 |
//! | SETTINGS payload | 256 bytes | browsers send under 40; over it, H3_EXCESSIVE_LOAD |
//! | decoded field section | our SETTINGS_MAX_FIELD_SECTION_SIZE (the `FieldList`'s limit; 16 KiB as for HTTP/2) | RFC accounting, name + value + 32 per field; over it, 431 |
//! | fields per section | the caller's `max_fields` | a section of one-byte indexed lines costs 32 bytes each in RFC accounting, so the size bound already caps it near 500; a lower count bounds the request layer's work |
//! | QPACK dynamic table | 0 | nothing to keep per connection, nothing a client can make us hold or block on |
//!
//! What the frame layer leaves to the connection: metering frames that do no work (`ControlStream::idle_frames`,
//! unknown frames on request streams, empty DATA), as HTTP/2's overhead meter does; QUIC's own flow control
//! bounds bytes per stream and connection, not work per byte.

pub mod control;
pub mod error;
pub mod frame;
pub mod qpack;
pub mod request;
pub mod respond;
pub mod settings;
pub mod uni;
pub mod varint;

#[cfg(test)]
mod testutil;

pub use error::{Code, ConnError};
