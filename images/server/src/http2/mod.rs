//! HTTP/2 (RFC 9113) as a sans-IO connection engine: bytes from the socket in, request heads out; response
//! heads and body handles in, frames out. It owns no socket, clock, thread or lock, so the worker's transport
//! (plain or TLS, epoll) feeds it exactly as it feeds the HTTP/1.1 parser. The worker drives it from
//! `server/h2.rs` (see "How the worker drives it" below).
//!
//! # The interface the worker uses
//!
//! ```text
//! let mut c: Conn<Body> = Conn::new(Limits::default());   // queues our SETTINGS
//! // readable: append to the connection's read buffer, then
//! loop {
//!     let (used, ev) = c.recv(&buf[at..]);  at += used;
//!     match ev {
//!         Some(Event::Request(r)) => { let reply = answer::request::answer(site, &ask(&r), pathbuf);
//!                                      /* r borrows c: frame `reply`, then drop it */
//!                                      c.respond(r_stream, &[status, file_head, date], body)?; }
//!         None if used == 0 => break,       // keep buf[at..] for the next read (< 16,393 bytes)
//!         None => {}
//!     }
//! }
//! // writable (or after the loop): c.write(&mut out, budget) -> frames into `out`:
//! //   Out::put(&[u8]) for frame headers, control frames and response heads,
//! //   Out::put_body(&Body, offset, len) for DATA payloads (writev / sendfile / TLS copy by the transport).
//! // c.wants_write(), c.is_closed() (close after flushing), c.drain() on SIGTERM and --max-connection-age,
//! // c.borrow_buffers(&mut pool) before feeding it, c.return_buffers(&mut pool, keep) once nothing is in flight.
//! ```
//!
//! * `Event::Request(RequestHead)`: stream id, `method()`, `path()`, `scheme()`, `authority()` (`:authority`
//!   or `host`), `field(name)` for what the core reads (accept-encoding, if-none-match, if-modified-since,
//!   range, if-range, origin, access-control-request-*), `priority()` (RFC 9218), `end_stream` and
//!   `content_length()`. The head borrows the connection's decoded-field buffer until the next `recv`.
//! * Request bodies: a static server answers from the head (405 for a POST is the core's job). The engine
//!   counts and discards DATA, checks it against content-length (§8.1.1), gives the connection window back,
//!   and once the response is complete stops the upload with RST_STREAM(NO_ERROR) (§8.1).
//! * `respond(stream, head_parts, body)`: the head is an HPACK block in parts, so the per-file part can be
//!   encoded once at load time and the Date once per second; `body` is `(handle, start, end)` or None (HEAD,
//!   304, empty bodies: END_STREAM on HEADERS). Heads longer than the peer's max frame size go out as
//!   HEADERS + CONTINUATION.
//! * `write(out, budget)`: all queued control frames and heads, then DATA frames in RFC 9218 order (lowest
//!   urgency first; non-incremental responses one after another in stream order, incremental ones
//!   round-robin by frame), each within the connection window, the stream window, the peer's
//!   SETTINGS_MAX_FRAME_SIZE and `budget`.
//! * `B`, the body handle, is the worker's type (an `Arc` of in-memory bytes, a file range): the engine keeps
//!   it only while the body is being sent, and never copies a body itself.
//!
//! No allocation per request in steady state: the stream table, the decoded-field buffer, the header-block
//! buffer and the output queue are `Vec`s reused across requests and lent between connections (`Buffers`); the HPACK table is one
//! byte buffer with in-place compaction; a request head is offsets into the field buffer.
//!
//! # Limits, and why (`Limits::default()`)
//!
//! | limit | value | why |
//! | --- | --- | --- |
//! | SETTINGS_MAX_CONCURRENT_STREAMS | 128 | above h2load's `-m 100` and a browser's page; beyond it REFUSED_STREAM (h2spec 5.1.2) |
//! | SETTINGS_INITIAL_WINDOW_SIZE | 65,535 | we read no bodies; h2spec 4.2 needs ≥ 16,384 per stream |
//! | SETTINGS_MAX_FRAME_SIZE | 16,384 | the floor: a read buffer of 16,393 bytes always holds a whole frame |
//! | SETTINGS_MAX_HEADER_LIST_SIZE | 16 KiB | decoded fields (+32 each); beyond it counted, not copied, then 431 (a refusal: the reset meter), connection kept |
//! | SETTINGS_HEADER_TABLE_SIZE | 4,096 | the default: browsers' blocks shrink to 26–91 bytes after the first (figures below) |
//! | header block | 32 KiB, 16 frames | CONTINUATION flood: GOAWAY ENHANCE_YOUR_CALM |
//! | queued output | 64 KiB | control frames and heads the peer has not taken (not reading): ENHANCE_YOUR_CALM |
//! | overhead frames | 1,000 between requests | SETTINGS/PING/PRIORITY/WINDOW_UPDATE/unknown/empty frames, minus one per DATA frame sent |
//! | resets | 256 per 512 streams opened | rapid reset: peer cancels + every stream we do not open (REFUSED_STREAM, 431, malformed, ignored after our GOAWAY) |
//! | SETTINGS_NO_RFC7540_PRIORITIES | 1 | we schedule by RFC 9218 only |
//!
//! Every "per window" is counted in streams or frames, never in time, so the defences are deterministic and
//! each has a test in `tests/defences.rs` that runs the attack twice: tripped with the limits above, and
//! going through with that one limit lifted (so the test fails without the defence):
//! rapid reset (CVE-2023-44487), refused-stream churn, CONTINUATION flood (2024, frames and bytes), HPACK
//! bomb and oversized lists (431 with the HPACK state intact; a flood of them, and of streams after our GOAWAY,
//! charged to the reset meter; table names copied after an overflow bounded), PING/SETTINGS floods (CVE-2019-9512/9515:
//! unread answers bounded by the queue, read ones by the overhead budget), empty frames (CVE-2019-9518),
//! zero-window stalls and slow readers (CVE-2019-9511/9517: bodies are handles, not buffered bytes; heads
//! bounded by the queue; streams by the table).
//!
//! # Library decision (issue 26, item 4)
//!
//! The `h2` crate needs tokio's IO traits and its own task model, which the epoll loop does not have; a
//! sans-IO frame and stream layer is what the worker needs, so it is written here (~1,100 lines without
//! tests). For HPACK, the sans-IO crates were measured against a hand-written codec with `cargo bench
//! --bench hpack`, run once pinned to CPU 1 on this shared 2-core machine at load ~25 (best of 15 interleaved
//! rounds; the medians were 3–5× worse for both, so only the ratios mean anything):
//!
//! | per block / response | ours | loona-hpack 0.4.3 |
//! | --- | --- | --- |
//! | decode a browser page's 10 request blocks (Huffman, indexing; 26–438 bytes) | 437 ns | 71,658 ns (164×) |
//! | decode h2load's 10 blocks (32 bytes, then 5) | 49 ns | 2,981 ns (61×) |
//! | response head of 8 fields, per response | 1.5 ns (copy of the block encoded at load) | 306 ns (encodes every time) |
//! | the same head encoded anew | 391 ns (Huffman) | 306 ns (no Huffman) |
//! | encoded size of that head | 123 bytes every time | 156 bytes, also when repeated |
//!
//! (252 bytes as HTTP/1.1 text.) The crate's decoder allocates a `Vec` per field and decodes Huffman bit by
//! bit; ours writes into one reused buffer and resolves codes of up to 8 bits with one table lookup. The
//! crate encoder never indexed these fields, so its repeats cost the full 156 bytes; an encoder that indexed
//! everything would send a repeated head in about 8 bytes (one index per field, an estimate, not measured),
//! saving ~115 bytes per response at the price of per-connection encoding state and no precomputed blocks.
//! The hand-written codec is checked against RFC 7541 Appendix C (C.1–C.6) and cross-checked against the
//! crate both ways (`hpack/crosscheck.rs`), which stays a dev-dependency only.
//!
//! # Memory per connection (engine only)
//!
//! `Conn` is 432 bytes (504 before the request being reported was passed by value and `Limits` became u32s;
//! `idle_memory_after_a_page` holds it to that). Its reusable buffers (decoded fields, header-block fragments,
//! stream table, output queue: `Buffers`) are lent: the worker keeps up to 16 sets and lends one to the
//! connection it serves (`borrow_buffers`), which gives it back as soon as nothing is in flight
//! (`return_buffers`), so an idle connection holds its fixed state and the HPACK dynamic table only, and a busy
//! one works in buffers that already grew. After a browser's page (10 requests) the table is 2,688 bytes (2,119
//! of entries); a connection whose client indexed nothing holds none (`tests/exchange.rs`). RFC 7541 §4 makes
//! the decoder keep what the client inserted, up to our SETTINGS_HEADER_TABLE_SIZE (4,096): that table is the
//! one per-connection cost the client controls; `Limits::header_table_size` is the lever.
//!
//! On the wired server (release build, `--workers 1`, 10,000 idle connections opened at once, each one
//! request, RSS growth; kernel socket buffers not included): HTTP/1.1 211 B per connection (its slot); h2c
//! 652 B (the slot and the boxed engine, 440 bytes in a 448-byte allocation), 1,833 B before the buffers were
//! lent (every connection's buffers were live together in the burst, and freeing them later left holes the
//! allocator could not return); HTTPS/1.1 7,846 B and h2 over TLS 8,277 B (rustls: its 4 KiB read buffer, which
//! it keeps once a read was made, plus keys and session state, the same for both protocols). When a burst of
//! connections closes, the worker gives the freed memory back (`server/trim.rs`, glibc `malloc_trim`).

//! # h2spec groups each part addresses
//!
//! * `frame.rs`, `conn.rs` (`recv`): 3.5 preface, 4.1 frame format (unknown types/flags, reserved bit), 4.2
//!   frame size (connection FRAME_SIZE_ERROR for any frame over 16,384).
//! * `frames.rs`: 5.1 stream states (idle → PROTOCOL_ERROR; half-closed/closed → STREAM_CLOSED; a skipped
//!   lower id → PROTOCOL_ERROR, a recently closed one → STREAM_CLOSED), 5.1.1 ids, 5.1.2 concurrency, 5.3.1
//!   self-dependency, 5.4.1 GOAWAY on connection errors, 5.5 extensions, 6.1–6.10 every frame type's
//!   length/stream/padding rules, 6.5.2 setting values, 6.5.3 ordered settings + ACK, 6.9.1/6.9.2 windows
//!   (overflow, negative windows after SETTINGS), 8.1 trailers must end the stream, 8.2 (PUSH_PROMISE).
//! * `request.rs`: 8.1.2 field names, 8.1.2.1 pseudo-headers, 8.1.2.2 connection-specific fields and TE,
//!   8.1.2.3 required pseudo-headers, 8.1.2.6 content-length against DATA.
//! * `hpack/`: 4.3 and hpack 2.3.3 (index space), 4.2 (size update bound), 5.2 (Huffman padding and EOS),
//!   6.1 (index 0), 6.3 (size update position): COMPRESSION_ERROR.
//! * generic 1–5: GET/HEAD/POST exchanges, DATA across frames, CONTINUATION, PING, SETTINGS, priorities.
//!
//! `tests/conformance.rs` has a row per case with the code h2spec expects.
//!
//! # How the worker drives it
//!
//! * Picking the protocol (`server/io.rs`, `server/h2.rs`): ALPN `h2` on TLS (`--http2`, on by default), the
//!   client preface on the plain port with `--h2c`; the connection slot's `Proto` enum says which, decided once.
//! * Reading: the worker's read buffer, what `recv` leaves (less than one frame, ≤ 16,393 bytes) kept for the next
//!   read. Each request head becomes the core's `answer::request::Ask` (as `http1::respond` builds it from a parsed
//!   head; `https_redirect` on h2c with `--https-redirect`), `answer::request::answer` gives the `Reply`, and
//!   `respond.rs` frames it: `:status` and the fields per `Head` kind (a whole file's from `Variant::h2_200`, the
//!   HPACK block encoded at load time beside the HTTP/1.1 head; a redirect's `location` from `Location::write`),
//!   then the per-second Date block as the head's last part; `Body::None` is END_STREAM on HEADERS. No decision is
//!   made again in the framing.
//! * Writing: `write` into the worker's batch `Out` (DATA bytes copied, disk bodies read with `pread`), sent with
//!   the batch's gathered write or through rustls; what the socket does not take waits as `Pending`, as for
//!   HTTP/1.1, and writing resumes when it drains.
//! * The clock the engine does not have: GOAWAY (`drain`) on SIGTERM, at `--max-connection-age` and after
//!   `--max-requests-per-connection`; `settings_timeout` when our SETTINGS stay unacknowledged past
//!   `--header-timeout`; GOAWAY and close when idle for `--keepalive-timeout`; a close when open streams make no
//!   progress that long (zero window, stopped reader). `return_buffers` after every flush that leaves
//!   nothing in flight (the worker's pool of `Buffers`).
//! * Tests on the real binary: `tests/h2.rs` (the same answers as HTTP/1.1 over TLS and h2c, by curl),
//!   `tests/h2_client.rs` (the `h2` crate's client over h2c), `tests/h2_attacks.rs`, `tests/h2_lifecycle.rs`;
//!   `make h2spec` passes 145/145 over TLS and h2c.
//! * Measured on the wired server: see "Memory per connection" above and the server README, "HTTP/2". The
//!   benchmark rows against the peers are `make bench-server`'s.

pub mod conn;
pub mod frame;
mod frames;
pub mod hpack;
pub mod limits;
pub mod priority;
pub mod request;
pub mod respond;
pub mod send;
mod stream;

#[cfg(test)]
mod tests;

pub use conn::{Buffers, Conn, Event, Out};
pub use limits::Limits;
pub use priority::Priority;
pub use request::RequestHead;
pub use send::RespondError;
