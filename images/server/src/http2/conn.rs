//! The connection: bytes in, events out (`recv`), and the state every frame changes. Responses and DATA
//! scheduling are in `send.rs`; the frame handlers in `frames.rs`.

use super::frame::{self, ErrorCode, Head, DEFAULT_MAX_FRAME, HEADER_LEN, PREFACE};
use super::hpack::{Decoder, FieldList};
use super::limits::{Limits, Meters};
use super::request::{Pseudo, RequestHead};
use super::stream::{RecentlyClosed, Stream};

/// What `recv` reports. Only requests: everything else the connection answers itself.
pub enum Event<'a> {
    /// A request head. Answer it with `Conn::respond` (after dropping the event).
    Request(RequestHead<'a>),
}

/// Where `write` puts frames: plain bytes (frame headers, control frames, response heads) and body ranges by
/// handle, so a transport can gather them with writev or sendfile instead of copying.
pub trait Out<B> {
    fn put(&mut self, bytes: &[u8]);
    fn put_body(&mut self, body: &B, offset: u64, len: usize);
}

/// The copying sink: fine for tests, TLS (which copies anyway) and small bodies.
impl<B: AsRef<[u8]>> Out<B> for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    fn put_body(&mut self, body: &B, offset: u64, len: usize) {
        let o = offset as usize;
        self.extend_from_slice(&body.as_ref()[o..o + len]);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Waiting for the 24-byte client preface.
    Preface,
    /// The preface came; the next frame must be SETTINGS (§3.4).
    FirstSettings,
    Open,
    /// A connection error: GOAWAY queued, nothing more is read.
    Failed,
}

/// A header block being assembled from HEADERS and CONTINUATION frames.
pub(super) struct Block {
    pub stream: u32,
    pub end_stream: bool,
    pub frames: u32,
    /// The HEADERS frame's RFC 7540 priority named the stream itself (§5.3.1: stream PROTOCOL_ERROR).
    pub self_dependent: bool,
}

/// A connection's reusable buffers (decoded fields, header-block fragments, stream table, output queue): what a
/// busy connection needs and an idle one does not. The worker keeps a few sets and lends one to the connection
/// it is serving (`Conn::borrow_buffers`, `Conn::return_buffers`), so 10,000 idle connections hold none.
pub struct Buffers<B> {
    fields: FieldList,
    block: Vec<u8>,
    streams: Vec<Stream<B>>,
    q: Vec<u8>,
}

/// A request head `recv` is about to report: (stream, end_stream, pseudo-header positions). Handed from the
/// frame handler to `recv` by value, so the connection keeps no room for it between calls.
pub(super) type Ready = (u32, bool, Pseudo);

/// One HTTP/2 connection, sans IO. `B` is the caller's handle for a response body (bytes in memory, a file
/// range, ...); the connection stores it until the body is sent and hands it back to `Out::put_body`.
pub struct Conn<B> {
    pub(super) limits: Limits,
    pub(super) phase: Phase,
    pub(super) decoder: Decoder,
    /// The decoded fields of the last header block; the request event borrows them.
    pub(super) fields: FieldList,
    /// Fragments of a header block split over CONTINUATION frames.
    pub(super) block: Vec<u8>,
    pub(super) cont: Option<Block>,
    /// Open streams (at most `max_concurrent_streams`), unordered.
    pub(super) streams: Vec<Stream<B>>,
    pub(super) closed: RecentlyClosed,
    /// The highest stream id the client has used: lower unused ids are closed, higher ones idle (§5.1.1).
    pub(super) max_client_id: u32,
    /// Frames for the peer in order (control frames, response heads), taken whole by `write`.
    pub(super) q: Vec<u8>,
    /// The peer's SETTINGS_INITIAL_WINDOW_SIZE and SETTINGS_MAX_FRAME_SIZE.
    pub(super) peer_initial_window: i64,
    pub(super) peer_max_frame: usize,
    /// Connection-level windows: ours to send in, and the peer's DATA we have not yet given back.
    pub(super) send_window: i64,
    pub(super) recv_window: i64,
    pub(super) recv_unacked: i64,
    pub(super) meters: Meters,
    /// The last stream id our GOAWAY announced, once one was sent.
    pub(super) goaway: Option<u32>,
    pub(super) peer_goaway: bool,
    /// Counts DATA frames sent: the round-robin clock among incremental streams.
    pub(super) tick: u64,
    /// The peer acknowledged our SETTINGS (the worker times out a peer that never does, §6.5.3).
    pub(super) settings_acked: bool,
}

impl<B> Conn<B> {
    /// A server connection; its SETTINGS are queued for the first `write`.
    pub fn new(limits: Limits) -> Conn<B> {
        let mut c = Conn {
            phase: Phase::Preface,
            decoder: Decoder::new(limits.header_table_size as usize),
            fields: FieldList::new(limits.max_header_list as usize),
            block: Vec::new(),
            cont: None,
            streams: Vec::new(),
            closed: RecentlyClosed::default(),
            max_client_id: 0,
            q: Vec::new(),
            peer_initial_window: frame::DEFAULT_WINDOW,
            peer_max_frame: DEFAULT_MAX_FRAME as usize,
            send_window: frame::DEFAULT_WINDOW,
            recv_window: frame::DEFAULT_WINDOW,
            recv_unacked: 0,
            meters: Meters::default(),
            goaway: None,
            peer_goaway: false,
            tick: 0,
            settings_acked: false,
            limits,
        };
        c.queue_settings();
        c
    }

    fn queue_settings(&mut self) {
        let l = &self.limits;
        let mut p = [0u8; 36];
        let mut n = 0;
        let mut set = |id: u16, v: u32| {
            p[n..n + 2].copy_from_slice(&id.to_be_bytes());
            p[n + 2..n + 6].copy_from_slice(&v.to_be_bytes());
            n += 6;
        };
        if l.header_table_size != 4096 {
            set(0x1, l.header_table_size);
        }
        set(0x3, l.max_concurrent_streams);
        set(0x4, l.initial_window);
        set(0x5, DEFAULT_MAX_FRAME);
        set(0x6, l.max_header_list);
        // SETTINGS_NO_RFC7540_PRIORITIES (RFC 9218 §2.1): we schedule by the priority header only.
        set(0x9, 1);
        frame::put(&mut self.q, frame::SETTINGS, 0, 0, &p[..n]);
    }

    /// Reads frames from `input` until one yields an event or the input runs out of whole frames. Returns the
    /// bytes used (keep the rest for the next call, with more input appended) and the event, if any. A read
    /// buffer of `HEADER_LEN + DEFAULT_MAX_FRAME` bytes always makes progress, since we never allow bigger
    /// frames. After a connection error it consumes everything and reports nothing; `write` then yields the
    /// GOAWAY and `is_closed` turns true.
    pub fn recv(&mut self, input: &[u8]) -> (usize, Option<Event<'_>>) {
        let mut used = 0;
        loop {
            if self.phase == Phase::Failed {
                return (input.len(), None);
            }
            let rest = &input[used..];
            if self.phase == Phase::Preface {
                let n = rest.len().min(PREFACE.len());
                if rest[..n] != PREFACE[..n] {
                    self.fail(ErrorCode::Protocol);
                    continue;
                }
                if n < PREFACE.len() {
                    return (used, None);
                }
                used += n;
                self.phase = Phase::FirstSettings;
                continue;
            }
            let Some(h) = Head::parse(rest) else { return (used, None) };
            if h.len > DEFAULT_MAX_FRAME {
                // §4.2: larger than our SETTINGS_MAX_FRAME_SIZE. A connection error for every type keeps us
                // from buffering it (h2spec 4.2 accepts it for DATA too).
                self.fail(ErrorCode::FrameSize);
                continue;
            }
            let end = HEADER_LEN + h.len as usize;
            if rest.len() < end {
                return (used, None);
            }
            used += end;
            let r = self.frame(h, &rest[HEADER_LEN..end]);
            if self.q.len() > self.limits.max_queued as usize {
                // The peer sends faster than it reads (or floods frames that need answers): CVE-2019-9512,
                // 9515, 9517. Drop what is queued rather than grow.
                self.q.clear();
                self.fail(ErrorCode::EnhanceYourCalm);
                continue;
            }
            match r {
                Ok(Some((id, end_stream, p))) => {
                    return (used, Some(Event::Request(RequestHead::new(id, end_stream, &self.fields, p))));
                }
                Ok(None) => {}
                Err(code) => self.fail(code),
            }
        }
    }

    /// A connection error (§5.4.1): GOAWAY with the last stream we may have acted on, then nothing more.
    pub(super) fn fail(&mut self, code: ErrorCode) {
        if self.phase == Phase::Failed {
            return;
        }
        self.phase = Phase::Failed;
        self.streams.clear();
        self.cont = None;
        frame::put_goaway(&mut self.q, self.max_client_id, code);
    }

    /// A stream error (§5.4.2): RST_STREAM, and the stream is closed.
    pub(super) fn reset(&mut self, id: u32, code: ErrorCode) {
        frame::put_rst(&mut self.q, id, code);
        if let Some(i) = self.find(id) {
            self.streams.swap_remove(i);
        }
        self.closed.add(id);
    }

    pub(super) fn find(&self, id: u32) -> Option<usize> {
        self.streams.iter().position(|s| s.id == id)
    }

    /// Removes stream `i` when both directions are done.
    pub(super) fn close_if_done(&mut self, i: usize) {
        let s = &self.streams[i];
        if !s.recv_open && s.send_done() {
            self.closed.add(s.id);
            self.streams.swap_remove(i);
        }
    }

    /// A frame that did no request work: charged to the flood budget.
    pub(super) fn charge(&mut self) -> Result<(), ErrorCode> {
        if self.meters.overhead(&self.limits) {
            Ok(())
        } else {
            Err(ErrorCode::EnhanceYourCalm)
        }
    }

    /// Graceful drain (shutdown, `--max-connection-age`): GOAWAY(NO_ERROR) naming the last stream the client
    /// opened; later streams are ignored (the client retries them elsewhere), open ones finish, and
    /// `is_closed` turns true when they have.
    pub fn drain(&mut self) {
        if self.phase == Phase::Failed || self.goaway.is_some() {
            return;
        }
        self.goaway = Some(self.max_client_id);
        frame::put_goaway(&mut self.q, self.max_client_id, ErrorCode::NoError);
    }

    /// True when the worker should close the socket once it has written what `write` gave it: after a
    /// connection error, or after a drain (ours or the peer's GOAWAY) with no stream left.
    pub fn is_closed(&self) -> bool {
        self.q.is_empty()
            && (self.phase == Phase::Failed || ((self.goaway.is_some() || self.peer_goaway) && self.streams.is_empty()))
    }

    /// Our SETTINGS are still unacknowledged: past the worker's deadline, `settings_timeout`.
    pub fn awaiting_settings_ack(&self) -> bool {
        !self.settings_acked && self.phase != Phase::Failed
    }

    /// The peer did not acknowledge our SETTINGS in time (§6.5.3): GOAWAY SETTINGS_TIMEOUT.
    pub fn settings_timeout(&mut self) {
        self.fail(ErrorCode::SettingsTimeout);
    }

    /// Streams open now.
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Heap bytes this connection holds (its `size_of` aside): reusable buffers, the stream table, the HPACK
    /// table.
    pub fn heap_bytes(&self) -> usize {
        self.decoder.heap_bytes()
            + self.fields.heap_bytes()
            + self.block.capacity()
            + self.q.capacity()
            + self.streams.capacity() * std::mem::size_of::<Stream<B>>()
    }

    /// Takes a set of reusable buffers from `pool` when this connection holds none (it was quiet), so a busy
    /// connection works in buffers that already grew instead of allocating its own. No allocation.
    pub fn borrow_buffers(&mut self, pool: &mut Vec<Buffers<B>>) {
        if self.holds_no_buffers() {
            if let Some(b) = pool.pop() {
                self.fields.swap_buffers(&mut { b.fields });
                self.block = b.block;
                self.streams = b.streams;
                self.q = b.q;
            }
        }
    }

    /// When nothing is in flight (no stream, no header block, nothing queued), hands this connection's reusable
    /// buffers to `pool` (kept while it has fewer than `keep` sets, freed otherwise) and keeps none: an idle
    /// connection holds only its fixed state and the HPACK table, and the next busy one reuses the buffers.
    /// Returns whether it did. No allocation (`pool` is made with capacity `keep`).
    pub fn return_buffers(&mut self, pool: &mut Vec<Buffers<B>>, keep: usize) -> bool {
        if !self.streams.is_empty() || self.cont.is_some() || !self.q.is_empty() {
            return false;
        }
        if self.holds_no_buffers() {
            return true;
        }
        let mut fields = FieldList::new(0);
        self.fields.swap_buffers(&mut fields);
        let mut b = Buffers {
            fields,
            block: std::mem::take(&mut self.block),
            streams: std::mem::take(&mut self.streams),
            q: std::mem::take(&mut self.q),
        };
        b.block.clear();
        if pool.len() < keep {
            pool.push(b);
        }
        true
    }

    fn holds_no_buffers(&self) -> bool {
        self.fields.heap_bytes() == 0
            && self.block.capacity() == 0
            && self.streams.capacity() == 0
            && self.q.capacity() == 0
    }

    /// Frees reusable buffers while the connection has nothing in flight, so an idle connection costs only
    /// its fixed state and the HPACK table (see the memory figures in `http2/mod.rs`).
    pub fn release_idle_memory(&mut self) {
        if self.streams.is_empty() && self.cont.is_none() && self.q.is_empty() {
            self.fields.release();
            self.block = Vec::new();
            self.q = Vec::new();
            self.streams = Vec::new();
        }
    }
}
