//! What the server checks of QUIC itself, beside quinn-proto (which does the rest: server/h3.rs drives it), sans-IO:
//! datagram bytes and counts in, decisions out. Nothing here owns a socket, a clock or a connection.
//!
//! # Contract
//!
//! * `datagram::readable_prefix(d)`: how much of a datagram received by the server quinn-proto may see. Packets
//!   only a server sends (Retry, Version Negotiation: RFC 9000 §17.2.1, §17.2.5) never come from a client, so
//!   one of them in a client's datagram is damage or forgery; quinn-proto 0.11 closes a connection still
//!   handshaking on either ("client sent Retry", or a Version Negotiation not listing v1), so the datagram is cut
//!   just before that packet (the packets before it are whole and kept; a Retry and a Version Negotiation run to
//!   the datagram's end, so nothing follows them). The walk splits coalesced packets exactly as quinn-proto does
//!   (RFC 9000 §12.2: each long header's Length), and stops without cutting at what quinn-proto drops or answers
//!   itself (a short header, an unsupported version, a header that does not parse).
//! * `datagram::first_dcid(d, short_len)`: the Destination Connection ID of a datagram's first packet (the one
//!   quinn-proto routes it by).
//! * `amplification::Budget`: the anti-amplification limit (RFC 9000 §8.1), exactly: before the client's address
//!   is validated the server sends at most three times the bytes it received from it. quinn-proto 0.11 lets a
//!   whole datagram go while any of its own 3x budget is left (quinn-rs/quinn#1082, measured at 3.75x), so the
//!   caller asks it for a datagram only when `Budget::room` holds a whole one (`Connection::current_mtu`). The
//!   address counts as validated when the handshake completes, or as soon as the client uses a connection ID the
//!   server chose: RFC 9000 §8.1 allows that when the ID has at least 64 bits of entropy, as ours do (`cid`), and
//!   the client can only know it from the server's first flight.
//! * `addr::canonical(a)` / `addr::for_socket(a, v6)`: the client address quinn-proto is given (an IPv4-mapped IPv6
//!   address from the dual-stack socket as plain IPv4, so that quinn-proto can tell a NAT rebinding from a move to
//!   another host) and the form the socket takes back.
//! * `cid::Ids`: our connection IDs, for each worker's quinn-proto endpoint: the worker's index (the byte the kernel
//!   steers short-header packets by: sys/steer.rs), 8 random bytes and a 4-byte keyed hash of both (`validate`
//!   tells ours from noise, which then gets no stateless reset).
//! * `keys::Keys`: the secrets all workers' endpoints share (token, stateless-reset and ID-hash keys), so that what
//!   one worker issued every other can check.
//!
//! They run once per received datagram: a short header (every datagram after the handshake) costs one byte test,
//! a client address one comparison.

pub mod addr;
pub mod amplification;
pub mod cid;
pub mod datagram;
pub mod keys;
