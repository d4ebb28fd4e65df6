//! One stream's state. The server never opens streams (no push), so a stream exists from the client's HEADERS
//! until both directions are done; its slot is reused in a table of at most SETTINGS_MAX_CONCURRENT_STREAMS.

use super::priority::Priority;

/// The response side of a stream.
pub(crate) enum Send<B> {
    /// The core has not answered yet.
    Awaiting,
    /// Headers queued; `body[offset..end]` still to send as DATA.
    Body { body: B, offset: u64, end: u64 },
    /// END_STREAM sent (or queued).
    Done,
}

pub(crate) struct Stream<B> {
    pub id: u32,
    /// The request may still send DATA or trailers (no END_STREAM yet).
    pub recv_open: bool,
    pub send: Send<B>,
    /// What the peer lets us send (may go negative after a SETTINGS change, RFC 9113 §6.9.2).
    pub send_window: i64,
    /// What we still let the peer send.
    pub recv_window: i64,
    pub content_length: Option<u64>,
    pub received: u64,
    pub priority: Priority,
    /// When this stream last had a DATA frame sent: round-robin among incremental streams.
    pub served: u64,
}

impl<B> Stream<B> {
    pub fn new(id: u32, recv_open: bool, send_window: i64, recv_window: i64) -> Stream<B> {
        Stream {
            id,
            recv_open,
            send: Send::Awaiting,
            send_window,
            recv_window,
            content_length: None,
            received: 0,
            priority: Priority::default(),
            served: 0,
        }
    }

    pub fn send_done(&self) -> bool {
        matches!(self.send, Send::Done)
    }

    /// Bytes of body still to send, when the stream has a body queued.
    pub fn remaining(&self) -> u64 {
        match &self.send {
            Send::Body { offset, end, .. } => end - offset,
            _ => 0,
        }
    }

    /// The scheduling key (RFC 9218 §10): lower urgency first; at one urgency, non-incremental responses one
    /// after the other in stream order, then incremental ones round-robin by frame.
    pub fn order(&self) -> (u8, bool, u64) {
        let p = self.priority;
        (p.urgency, p.incremental, if p.incremental { self.served } else { self.id as u64 })
    }
}

/// The most recently closed stream ids, to tell a frame on a closed stream (STREAM_CLOSED, §5.1) from one on a
/// stream that was skipped and is implicitly closed (PROTOCOL_ERROR for HEADERS, §5.1.1).
#[derive(Default)]
pub(crate) struct RecentlyClosed {
    ids: [u32; 16],
    next: u8,
}

impl RecentlyClosed {
    pub fn add(&mut self, id: u32) {
        self.ids[self.next as usize] = id;
        self.next = (self.next + 1) % self.ids.len() as u8;
    }

    pub fn contains(&self, id: u32) -> bool {
        id != 0 && self.ids.contains(&id)
    }
}
