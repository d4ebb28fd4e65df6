//! Fair share (issue 44): how much one client address may ask of one site. The contract:
//!
//! - **What is limited**: requests, per site and per client address, by a token bucket the site value sets
//!   (`limits.perClient {requests, periodSeconds?, burst?}`, docs/design/site-value.md): `requests` tokens per
//!   `periodSeconds`, at most `burst` saved up. Off unless set. A request without a token gets `429 Too Many
//!   Requests` with `Retry-After`: the whole seconds until its token (answer/limit.rs, the same reply over
//!   HTTP/1.1, HTTP/2 and HTTP/3), counted in `hyperstatic_requests_limited_total{reason="per_client"}` and
//!   marked `"limited":"per_client"` in the access log.
//! - **TLS handshakes** (handshake.rs): `limits.perClientHandshakes {handshakes, periodSeconds?, burst?}`, the
//!   same bucket on the connections accepted on the TLS listener, checked at accept: a client past it has its
//!   connection closed before the handshake begins, counted in
//!   `hyperstatic_requests_limited_total{reason="tls_handshake"}`.
//! - **The bucket** (bucket.rs) is GCRA, the token bucket kept as one number per client: the time its bucket will
//!   be full again. Admitting is an add and a compare; nothing ticks, nothing is refilled in the background.
//! - **The address** (client.rs): the client as the protocol names it — the peer, the PROXY protocol source, or
//!   behind the site's trusted proxies the right-most untrusted `X-Forwarded-For` entry (guard/forwarded.rs),
//!   the same address the access rules and the access log use. An IPv4 address is one client; an IPv6 address is bucketed by its /64, because
//!   one host picks freely among the 2^64 addresses of its network (privacy addresses, SLAAC): per /128 it would
//!   mint a fresh bucket per request. An IPv4-mapped IPv6 address (a dual-stack listener) is its IPv4 address.
//! - **Bounded memory whatever the number of addresses** (table.rs): each worker owns one fixed table, sized by
//!   `--client-table-size` divided by the workers and allocated when the worker starts; a set-associative array
//!   of 4 buckets per 64-byte set. A client not in its set takes the place of the set's fullest bucket (the one
//!   that loses least when forgotten: a bucket already full is the same as no bucket). A flood from a million
//!   addresses grows nothing; no allocation and no lock on the request path.
//! - **Per worker**: each worker limits with its own table, so a client whose connections land on several workers
//!   (SO_REUSEPORT spreads connections by their addresses and ports) may get up to `workers ×` the limit. Sharing
//!   one table would put a lock or contended atomics on every request; dividing the limit by the workers would
//!   give a client on one connection (HTTP/2, a browser's usual) a fraction of it. One connection, and so one
//!   HTTP/2 client, always meets the exact limit.
//! - **What an attacker cycling addresses can do**: not be limited (each new address is a new, full bucket: a
//!   per-address limit is no defence against a distributed flood), and push other clients' buckets out of a set.
//!   A client pushed out comes back with a full bucket: eviction only ever lets a client do more, never less, so
//!   the flood weakens the limit for others but cannot get them refused. The set is picked by a hash keyed per
//!   process, so an attacker cannot aim addresses at one victim's set without trying many.

pub mod bucket;
pub mod client;
pub mod handshake;
pub mod table;

pub use bucket::Rate;
pub use table::Clients;
