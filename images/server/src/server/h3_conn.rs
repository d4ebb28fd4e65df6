//! One HTTP/3 connection's streams (RFC 9114 §6), as h2.rs is an HTTP/2 connection's: each client bidirectional
//! stream is a request, read by `http3::request::RequestStream`; its head is decoded by our static-only QPACK
//! decoder, checked by HTTP/2's request rules (RFC 9114 §4.3 asks the same of the same fields), turned into the
//! core's `Ask` by h2.rs's `ask` and answered by `answer::request::answer`; the `Reply` is framed by
//! http3/respond.rs. The head goes to the stream as one `Bytes`, the body by handle: a memory body is a `Bytes`
//! over the table's `Arc<[u8]>` (no copy; it stays alive until the peer acknowledges it), a static one is static,
//! a disk one is read with pread in 64 KiB pieces as the stream's flow control takes them.
//!
//! The client's unidirectional streams: its control stream (SETTINGS, GOAWAY; `http3::control`), its QPACK
//! streams (nothing valid to say to a table of capacity 0; `http3::qpack::streams`), others stopped. Ours: one
//! control stream with our SETTINGS, opened when the handshake completes; GOAWAY on it when the worker drains.
//! Every `ConnError` the readers return closes the connection with its code; a malformed request head resets
//! its stream with H3_MESSAGE_ERROR, as RFC 9114 §4.1.2 says.

use crate::guard;
use std::fs::File;
use std::net::SocketAddr;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use quinn_proto::{Connection, Dir, Event, ReadError, StreamEvent, StreamId, VarInt, WriteError};

use super::conn::Done;
use super::Worker;
use crate::access;
use crate::answer::limit::{self, Limiter};
use crate::answer::reply::Reply;
use crate::answer::request::{self, Site};
use crate::counters::bump;
use crate::fxhash::FxMap;
use crate::http2::hpack::FieldList;
use crate::http2::priority::Priority;
use crate::http2::request::{check_request, RequestHead};
use crate::http2::respond::BodyRef;
use crate::http3::control::{self, ControlStream};
use crate::http3::frame::{self, Limits};
use crate::http3::qpack::decode::{decode, DecodeError};
use crate::http3::qpack::streams::{DecoderStream, EncoderStream};
use crate::http3::request::{End, Event as ReqEvent, RequestStream};
use crate::http3::uni::{self, Critical, Kind, TypeReader};
use crate::http3::{settings, Code, ConnError};
use crate::quic::amplification::{Budget, Seen};
use crate::state::code_index;
use crate::sys;
use crate::timing;

/// Requests in flight per connection (client bidirectional streams).
pub(super) const MAX_STREAMS: u32 = 100;
/// Fields decoded per request head at most (the size bound caps them near 500 anyway).
const MAX_FIELDS: usize = 128;
/// Control-stream frames that do no work (unknown types, MAX_PUSH_ID) a connection may send in all.
const MAX_IDLE_FRAMES: u64 = 10_000;
/// A disk body's piece.
const DISK_CHUNK: u64 = 64 * 1024;
/// The size of the buffers response heads are cut from (`Scratch::frozen_head`).
const ARENA: usize = 64 * 1024;

/// The worker's reused buffers for answering HTTP/3 requests (h3.rs keeps them): the framed head, its section,
/// a redirect's Location, the per-second Date lines (QPACK), the decoded request fields, a stream's chunks.
pub(super) struct Scratch {
    pub(super) head: Vec<u8>,
    pub(super) section: Vec<u8>,
    pub(super) loc: Vec<u8>,
    pub(super) date: Vec<u8>,
    pub(super) fields: FieldList,
    pub(super) chunks: Vec<Bytes>,
    /// Where framed heads are cut from (`frozen_head`).
    arena: BytesMut,
    /// When the first request of the batch being answered was read (its duration's start).
    pub(super) batch_start: Option<u64>,
}

impl Scratch {
    pub(super) fn new() -> Scratch {
        Scratch {
            head: Vec::with_capacity(1024),
            section: Vec::with_capacity(1024),
            loc: Vec::with_capacity(256),
            date: Vec::new(),
            fields: FieldList::new(crate::http2::Limits::default().max_header_list as usize),
            chunks: Vec::new(),
            arena: BytesMut::new(),
            batch_start: None,
        }
    }

    /// `head` as a `Bytes` the stream can keep until the client acknowledges it, cut from a shared arena: one
    /// allocation per `ARENA` bytes of heads (a few hundred responses) instead of one per response. An arena is
    /// freed when the last head cut from it is acknowledged, so what it holds is bounded by the heads in flight.
    fn frozen_head(&mut self) -> Bytes {
        if self.arena.capacity() < self.head.len() {
            self.arena = BytesMut::with_capacity(ARENA.max(self.head.len()));
        }
        self.arena.extend_from_slice(&self.head);
        self.arena.split().freeze()
    }
}

/// A memory body's bytes as a `Bytes` owner: the variant's allocation, kept alive by the Arc.
struct MemSlice {
    body: Arc<[u8]>,
    start: usize,
    end: usize,
}

impl AsRef<[u8]> for MemSlice {
    fn as_ref(&self) -> &[u8] {
        &self.body[self.start..self.end]
    }
}

/// A response on its way out.
#[derive(Default)]
struct Resp {
    /// What the stream has yet to take: `out[at..len]` (the head, then a body piece). Inline, not a `Vec`: a
    /// response is at most two pieces at a time, and a `Vec` cost an allocation per request.
    out: [Bytes; 2],
    len: usize,
    at: usize,
    /// A disk body's file and the range still to read.
    disk: Option<(Arc<File>, u64, u64)>,
    /// Our side is finished (or reset): nothing more to send.
    done: bool,
}

struct Req {
    reader: RequestStream,
    resp: Resp,
    answered: bool,
    /// The client's side ended (FIN read, or reset).
    recv_done: bool,
}

/// A client unidirectional stream, by what its type said.
enum Uni {
    Typing(TypeReader),
    Control(ControlStream),
    Encoder(EncoderStream),
    Decoder(DecoderStream),
    Ignored,
}

pub(super) struct H3Conn {
    pub(super) conn: Connection,
    pub(super) born: Instant,
    pub(super) handshaking: bool,
    pub(super) timeout: Option<Instant>,
    /// What may still be sent before the client's address is validated (None once it is; quic/amplification.rs).
    pub(super) budget: Option<Budget>,
    /// By stream id, with FxHash rather than SipHash (a lookup or two per request event): the ids are not the
    /// client's to choose freely (streams open in order, at most MAX_STREAMS at once), so no key flood to fear.
    reqs: FxMap<StreamId, Req>,
    uni: FxMap<StreamId, Uni>,
    critical: Critical,
    /// Our control stream, and what of it the stream has not taken yet.
    control: Option<StreamId>,
    control_out: Vec<u8>,
    /// The id after the highest request stream accepted (a GOAWAY's id).
    next_bidi: u64,
    goaway: Option<u64>,
    /// Requests answered, against `--max-requests-per-connection`.
    requests: u64,
    /// When `--max-connection-age` retires the connection (GOAWAY, as for HTTP/2).
    retire_at: Option<Instant>,
}

impl H3Conn {
    pub(super) fn new(conn: Connection, now: Instant, budget: Option<Budget>, max_age: Duration) -> H3Conn {
        H3Conn {
            conn,
            born: now,
            handshaking: true,
            timeout: None,
            budget,
            reqs: FxMap::default(),
            uni: FxMap::default(),
            critical: Critical::default(),
            control: None,
            control_out: Vec::new(),
            next_bidi: 0,
            goaway: None,
            requests: 0,
            retire_at: now.checked_add(max_age),
        }
    }

    /// The next time the worker must look at this connection: quinn-proto's next timer, or its retirement by age
    /// while it may be retired.
    pub(super) fn wake(&mut self) -> Option<Instant> {
        let retire = self.retire_at.filter(|_| self.retirable());
        match (self.conn.poll_timeout(), retire) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Past `--max-connection-age` or `--max-requests-per-connection`: GOAWAY (RFC 9114 §5.2), so the client takes
    /// its next requests to a new connection, which the kernel may give another worker or a new pod; the requests
    /// already accepted are answered, and the connection ends when the client closes it or at the idle timeout.
    /// Like HTTP/2's, what spreads long-lived connections over replicas the autoscaler added.
    pub(super) fn retire_if_due(&mut self, now: Instant, max_requests: u64) {
        if self.retirable() && (self.requests >= max_requests || self.retire_at.is_some_and(|t| now >= t)) {
            self.goaway(now);
        }
    }

    /// Whether age or count may retire the connection now: not yet sent GOAWAY, our control stream open, and at
    /// least one request answered. As HTTP/1.1's "the next response after this age", so a connection always
    /// serves something (`--max-connection-age 0s` does not turn every client away); one that never asks is the
    /// idle timeout's. Outside it, a passed retirement is left out of `wake` (else the loop would spin on it).
    fn retirable(&self) -> bool {
        self.goaway.is_none() && self.control.is_some() && self.requests > 0
    }

    /// A datagram of `len` bytes from `from`, its first packet naming `dcid`, was routed here: counted against the
    /// anti-amplification limit while the address is unproven, or proof of it.
    pub(super) fn received(&mut self, len: usize, from: SocketAddr, dcid: Option<&[u8]>) {
        let Some(b) = &mut self.budget else { return };
        // The limit is per address; quinn-proto drops a handshaking connection's packets from any other.
        if from != self.conn.remote_address() {
            return;
        }
        if b.received(len, dcid) == Seen::Validated {
            self.budget = None;
        }
    }

    /// No request in flight.
    pub(super) fn quiet(&self) -> bool {
        self.reqs.is_empty()
    }

    pub(super) fn close(&mut self, now: Instant, code: Code, why: &'static str) {
        if !self.conn.is_closed() {
            self.conn.close(
                now,
                VarInt::from_u64(code.value()).unwrap_or(VarInt::from_u32(0)),
                Bytes::from_static(why.as_bytes()),
            );
        }
    }

    /// GOAWAY with the first request stream we will not answer (RFC 9114 §5.2); without a control stream yet
    /// (still handshaking), the connection is simply closed.
    pub(super) fn goaway(&mut self, now: Instant) {
        if self.goaway.is_some() {
            return;
        }
        if self.control.is_none() {
            self.close(now, Code::NoError, "shutting down");
            return;
        }
        self.goaway = Some(self.next_bidi);
        frame::put_goaway(&mut self.control_out, self.next_bidi);
        self.write_control();
    }

    /// Opens our control stream: its type, then our SETTINGS.
    fn start_control(&mut self) {
        let Some(id) = self.conn.streams().open(Dir::Uni) else { return };
        self.control = Some(id);
        crate::http3::varint::put(&mut self.control_out, uni::CONTROL);
        let max = crate::http2::Limits::default().max_header_list as u64;
        settings::put_ours(&mut self.control_out, max);
        self.write_control();
    }

    fn write_control(&mut self) {
        let Some(id) = self.control else { return };
        if let Ok(n) = self.conn.send_stream(id).write(&self.control_out) {
            self.control_out.drain(..n);
        }
    }

    /// Everything readable now on stream `id`, in order: (bytes into `chunks`, FIN seen, reset by the peer).
    fn read_all(&mut self, id: StreamId, chunks: &mut Vec<Bytes>) -> (bool, bool) {
        chunks.clear();
        let mut rs = self.conn.recv_stream(id);
        let Ok(mut c) = rs.read(true) else { return (true, false) };
        let (mut fin, mut reset) = (false, false);
        loop {
            match c.next(usize::MAX) {
                Ok(Some(ch)) => chunks.push(ch.bytes),
                Ok(None) => {
                    fin = true;
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(_)) => {
                    reset = true;
                    break;
                }
            }
        }
        let _ = c.finalize();
        (fin, reset)
    }

    /// A client stream we will not serve: stopped both ways with `code`.
    fn refuse_stream(&mut self, id: StreamId, code: Code) {
        let v = VarInt::from_u64(code.value()).unwrap_or(VarInt::from_u32(0));
        let _ = self.conn.recv_stream(id).stop(v);
        if id.dir() == Dir::Bi {
            let _ = self.conn.send_stream(id).reset(v);
        }
    }

    /// Reads a client's unidirectional stream: its type, then what that kind of stream says.
    fn read_uni(&mut self, id: StreamId, chunks: &mut Vec<Bytes>) -> Result<(), ConnError> {
        let Some(mut u) = self.uni.remove(&id) else { return Ok(()) };
        let (fin, reset) = self.read_all(id, chunks);
        for b in chunks.iter() {
            let mut at = 0;
            while at < b.len() {
                let rest = &b[at..];
                match &mut u {
                    Uni::Typing(t) => {
                        let (used, kind) = t.read(rest)?;
                        at += used;
                        let Some(k) = kind else { continue };
                        self.critical.open(k)?;
                        u = match k {
                            Kind::Control => Uni::Control(ControlStream::new(Limits::default())),
                            Kind::QpackEncoder => Uni::Encoder(EncoderStream),
                            Kind::QpackDecoder => Uni::Decoder(DecoderStream::default()),
                            Kind::Ignored(_) => {
                                self.refuse_stream(id, Code::StreamCreationError);
                                Uni::Ignored
                            }
                        };
                    }
                    Uni::Control(cs) => {
                        let (used, ev) = cs.read(rest)?;
                        at += used;
                        if cs.idle_frames() > MAX_IDLE_FRAMES {
                            return Err(ConnError {
                                code: Code::ExcessiveLoad,
                                why: "a flood of frames that do nothing",
                            });
                        }
                        match ev {
                            // The client is leaving: nothing to do but finish what it asked.
                            Some(control::Event::Goaway(_) | control::Event::Settings(_)) => {}
                            None if used == 0 => break,
                            None => {}
                        }
                    }
                    Uni::Encoder(e) => {
                        e.read(rest)?;
                        at = b.len();
                    }
                    Uni::Decoder(d) => {
                        d.read(rest)?;
                        at = b.len();
                    }
                    Uni::Ignored => at = b.len(),
                }
            }
        }
        if fin || reset {
            let kind = match u {
                Uni::Control(_) => Some(Kind::Control),
                Uni::Encoder(_) => Some(Kind::QpackEncoder),
                Uni::Decoder(_) => Some(Kind::QpackDecoder),
                Uni::Typing(_) | Uni::Ignored => None,
            };
            if let Some(k) = kind {
                Critical::closed(k)?;
            }
        } else {
            self.uni.insert(id, u);
        }
        Ok(())
    }
}

impl Resp {
    fn push(&mut self, b: Bytes) {
        self.out[self.len] = b;
        self.len += 1;
    }

    /// Drops the pieces the stream has taken (their bytes live on in quinn-proto's send buffer until acknowledged).
    fn clear(&mut self) {
        self.out = Default::default();
        self.len = 0;
        self.at = 0;
    }
}

/// Writes what the stream takes of `r`: queued chunks, then disk pieces, then the FIN.
fn pump(conn: &mut Connection, id: StreamId, r: &mut Resp) {
    if r.done {
        return;
    }
    let mut s = conn.send_stream(id);
    loop {
        if r.at < r.len {
            match s.write_chunks(&mut r.out[r.at..r.len]) {
                Ok(w) => r.at += w.chunks,
                // Blocked by flow control or congestion: a Writable event comes back here.
                Err(WriteError::Blocked) => return,
                Err(_) => {
                    r.done = true;
                    r.clear();
                    return;
                }
            }
            continue;
        }
        r.clear();
        if let Some((f, off, end)) = &mut r.disk {
            if *off < *end {
                let mut v = vec![0u8; (*end - *off).min(DISK_CHUNK) as usize];
                if f.read_exact_at(&mut v, *off).is_err() {
                    // The file shrank under us: the response cannot be whole.
                    let _ = s.reset(VarInt::from_u64(Code::InternalError.value()).unwrap_or(VarInt::from_u32(0)));
                    r.done = true;
                    return;
                }
                *off += v.len() as u64;
                r.push(Bytes::from(v));
                continue;
            }
        }
        let _ = s.finish();
        r.done = true;
        return;
    }
}

/// What a request head gets.
enum Answer {
    /// `Quic::head` holds the HEADERS frame (and the DATA frame's head); the body, if any; the request's urgency
    /// (RFC 9218: 0 most urgent, 7 least; 3 without a `priority` field).
    Respond(Option<(BodyRef, u64, u64)>, u8),
    /// Not a valid request: the stream is reset with H3_MESSAGE_ERROR.
    Malformed,
}

impl Worker {
    /// The connection's events after its input or timers: streams opened, readable, writable, stopped.
    pub(super) fn h3_events(&mut self, q: &mut Scratch, c: &mut H3Conn, now: Instant) {
        while let Some(ev) = c.conn.poll() {
            let r = match ev {
                Event::Connected => {
                    c.start_control();
                    Ok(())
                }
                Event::Stream(StreamEvent::Opened { dir }) => {
                    let mut r = Ok(());
                    while let Some(id) = c.conn.streams().accept(dir) {
                        r = r.and_then(|_| self.h3_opened(q, c, id));
                    }
                    r
                }
                Event::Stream(StreamEvent::Readable { id }) if id.dir() == Dir::Bi => self.h3_read_req(q, c, id),
                Event::Stream(StreamEvent::Readable { id }) => c.read_uni(id, &mut q.chunks),
                Event::Stream(StreamEvent::Writable { id }) => {
                    if Some(id) == c.control {
                        c.write_control();
                    } else if let Some(req) = c.reqs.get_mut(&id) {
                        pump(&mut c.conn, id, &mut req.resp);
                        if req.resp.done && req.recv_done {
                            c.reqs.remove(&id);
                        }
                    }
                    Ok(())
                }
                Event::Stream(StreamEvent::Stopped { id, .. }) => {
                    if c.reqs.remove(&id).is_some() {
                        let _ = c
                            .conn
                            .send_stream(id)
                            .reset(VarInt::from_u64(Code::RequestCancelled.value()).unwrap_or(VarInt::from_u32(0)));
                    }
                    Ok(())
                }
                _ => Ok(()),
            };
            if let Err(e) = r {
                c.close(now, e.code, e.why);
            }
        }
        c.retire_if_due(now, self.max_requests);
    }

    /// A client stream just accepted.
    fn h3_opened(&mut self, q: &mut Scratch, c: &mut H3Conn, id: StreamId) -> Result<(), ConnError> {
        if id.dir() == Dir::Uni {
            c.uni.insert(id, Uni::Typing(TypeReader::default()));
            return c.read_uni(id, &mut q.chunks);
        }
        let n = u64::from(id);
        if c.goaway.is_some_and(|g| n >= g) || c.reqs.len() >= MAX_STREAMS as usize {
            c.refuse_stream(id, Code::RequestRejected);
            return Ok(());
        }
        c.next_bidi = c.next_bidi.max(n + 4);
        let req = Req {
            reader: RequestStream::new(Limits::default()),
            resp: Resp::default(),
            answered: false,
            recv_done: false,
        };
        c.reqs.insert(id, req);
        self.h3_read_req(q, c, id)
    }

    /// Reads a request stream; answers its head when whole.
    fn h3_read_req(&mut self, q: &mut Scratch, c: &mut H3Conn, id: StreamId) -> Result<(), ConnError> {
        let Some(mut req) = c.reqs.remove(&id) else { return Ok(()) };
        let mut chunks = std::mem::take(&mut q.chunks);
        let (fin, reset) = c.read_all(id, &mut chunks);
        let r = self.h3_feed(q, c, id, &mut req, &chunks, fin, reset);
        q.chunks = chunks;
        r?;
        if !(req.resp.done && req.recv_done) {
            c.reqs.insert(id, req);
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn h3_feed(
        &mut self,
        q: &mut Scratch,
        c: &mut H3Conn,
        id: StreamId,
        req: &mut Req,
        chunks: &[Bytes],
        fin: bool,
        reset: bool,
    ) -> Result<(), ConnError> {
        let Req { reader, resp, answered, recv_done } = req;
        for b in chunks {
            let mut at = 0;
            loop {
                let (used, ev) = reader.read(&b[at..])?;
                at += used;
                let head = match ev {
                    Some(ReqEvent::Head(section)) => Some(section),
                    Some(ReqEvent::HeadTooLarge(_)) => None,
                    Some(_) => continue,
                    None if used == 0 => break,
                    None => continue,
                };
                if *answered {
                    continue;
                }
                *answered = true;
                // Still handshaking with a whole request head: it came in 0-RTT (the client's 1-RTT packets
                // follow its Finished, which ends the handshake). A head only begun in 0-RTT is answered once the
                // handshake ends, and a replay of the first flight cannot end it.
                let early = c.conn.is_handshaking();
                match self.h3_answer(q, head, c.conn.remote_address(), early)? {
                    Answer::Malformed => {
                        c.refuse_stream(id, Code::MessageError);
                        resp.done = true;
                    }
                    Answer::Respond(body, urgency) => {
                        c.requests += 1;
                        // quinn-proto sends the higher priority first; within one, streams in the order they were
                        // written, one after another (`send_fairness` off: server/h3.rs says why).
                        let _ = c.conn.send_stream(id).set_priority(7 - i32::from(urgency));
                        resp.push(q.frozen_head());
                        match body {
                            Some((BodyRef::Static(s), start, end)) => {
                                resp.push(Bytes::from_static(&s[start as usize..end as usize]))
                            }
                            Some((BodyRef::Mem(m), start, end)) => resp.push(Bytes::from_owner(MemSlice {
                                body: m,
                                start: start as usize,
                                end: end as usize,
                            })),
                            Some((BodyRef::Disk(f), start, end)) => resp.disk = Some((f, start, end)),
                            None => {}
                        }
                        pump(&mut c.conn, id, resp);
                    }
                }
            }
        }
        if reset {
            // The client abandoned the request: abandon the response too.
            *recv_done = true;
            if !resp.done {
                let _ = c
                    .conn
                    .send_stream(id)
                    .reset(VarInt::from_u64(Code::RequestCancelled.value()).unwrap_or(VarInt::from_u32(0)));
                resp.done = true;
            }
        } else if fin {
            *recv_done = true;
            if reader.finish()? == End::Incomplete && !*answered {
                c.refuse_stream(id, Code::RequestIncomplete);
                resp.done = true;
            }
        }
        Ok(())
    }

    /// Decodes and answers one request head (`None`: over our size bound, 431) into `q.head`; counted, timed and
    /// access-logged as HTTP/1.1 and HTTP/2 requests are. `early`: it arrived in 0-RTT, which a client may send
    /// again over 1-RTT (server/h3.rs: `server_config`), so only GET and HEAD are answered; any other method gets `425 Too Early` and its client retries it after the
    /// handshake (RFC 8470 §5.2; RFC 9114 §4.2.2's rule that a request the server did not process may be retried).
    fn h3_answer(
        &mut self,
        q: &mut Scratch,
        section: Option<&[u8]>,
        peer: SocketAddr,
        early: bool,
    ) -> Result<Answer, ConnError> {
        let table = sys::mem::detach(&self.table.value);
        let site = Site { table, spa_fallback: table.spa_fallback };
        let start_ns = *q.batch_start.get_or_insert_with(timing::now_ns);
        q.fields.clear();
        let decoded = match section {
            None => Err(DecodeError::TooLarge),
            Some(s) => decode(s, &mut q.fields, MAX_FIELDS),
        };
        let mut head = None;
        let mut limited = false;
        // The connection's address, or whom the site's trusted proxies name (guard/forwarded.rs).
        let mut client = Some(peer);
        let reply = match decoded {
            Err(DecodeError::Failed(why)) => return Err(ConnError { code: Code::QpackDecompressionFailed, why }),
            Err(DecodeError::TooLarge) => Reply::plain(431, false, false),
            Ok(()) => {
                let Ok(p) = check_request(&q.fields) else { return Ok(Answer::Malformed) };
                let r = head.insert(RequestHead::new(0, true, &q.fields, p));
                let is_head = r.method() == b"HEAD";
                // Fair share: the same check, at the same point, as HTTP/2's (h2.rs), keyed by the connection's
                // current address (a migrated connection is charged to where it is now).
                let mut l = Limiter {
                    clients: &mut self.clients,
                    counters: &self.shared.stats[self.id].fair,
                    now_ms: self.now_ms,
                };
                client = guard::client(table.access.as_deref(), Some(peer), || super::h2::forwarded_for(r));
                match limit::check(&mut l, table.per_client.as_ref(), 0, client, is_head) {
                    Some(refused) => {
                        limited = true;
                        refused
                    }
                    None if early && !(is_head || r.method() == b"GET") => Reply::plain(425, false, false),
                    None => match super::h2::ask(r) {
                        None => Reply::plain(400, false, is_head),
                        Some(a) => {
                            let a = request::Ask { client: client.map(|x| x.ip()), ..a };
                            request::answer(site, &a, &mut self.pathbuf, &mut self.verified)
                        }
                    },
                }
            }
        };
        let f = crate::http3::respond::frame(&mut q.head, &mut q.section, &mut q.loc, &reply, &q.date);
        let cfg = &self.shared.cfg;
        let log_from = self.batch_log.len() as u32;
        if cfg.access_log {
            self.log_counter += 1;
            if self.log_counter.is_multiple_of(cfg.access_log_sample) {
                let fields = access::Fields {
                    client,
                    method: head.as_ref().map_or(&b""[..], |r| r.method()),
                    target: head.as_ref().map_or(&b""[..], |r| r.path()),
                    protocol: "HTTP/3.0",
                    status: f.status,
                    bytes: f.body_len,
                    user_agent: head.as_ref().and_then(|r| r.field(b"user-agent")).unwrap_or(b""),
                    worker: self.id,
                };
                access::begin(&mut self.batch_log, &fields);
                if limited {
                    access::limited(&mut self.batch_log, "per_client");
                }
            }
        }
        let log_to = self.batch_log.len() as u32;
        self.batch.push(Done { start_ns, log_from, log_to });
        let stats = &self.shared.stats[self.id];
        bump(&stats.requests[code_index(f.status)], 1);
        bump(&stats.response_bytes, q.head.len() as u64 + f.body_len);
        bump(&stats.h3_streams, 1);
        let urgency = head.as_ref().map_or(Priority::default().urgency, |r| r.priority().urgency);
        Ok(Answer::Respond(f.body.filter(|_| f.body_len > 0), urgency))
    }
}
