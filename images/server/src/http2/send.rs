//! Responses: `respond` frames a response head (already HPACK-encoded, in parts) and keeps the body handle;
//! `write` hands out queued frames, then DATA in RFC 9218 priority order within both flow-control windows,
//! the peer's SETTINGS_MAX_FRAME_SIZE and the caller's byte budget.

use super::conn::{Conn, Out, Phase};
use super::frame::{self, ErrorCode, HEADER_LEN};
use super::stream::Send;

/// Why `respond` did not take a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RespondError {
    /// The stream is not open: the peer reset it, or the connection failed. Drop the response.
    NoStream,
    /// The stream already has its response.
    AlreadyAnswered,
}

/// Appends `len` bytes of the concatenation of `parts`, starting `skip` bytes in.
fn copy_parts(parts: &[&[u8]], mut skip: usize, mut len: usize, out: &mut Vec<u8>) {
    for p in parts {
        if skip >= p.len() {
            skip -= p.len();
            continue;
        }
        let take = (p.len() - skip).min(len);
        out.extend_from_slice(&p[skip..skip + take]);
        len -= take;
        skip = 0;
        if len == 0 {
            return;
        }
    }
}

impl<B> Conn<B> {
    /// Answers `stream` with a head and an optional body: `head` is the HPACK block in parts (e.g. the status,
    /// the file's headers encoded once at load time, the Date encoded once per second), `body` is a handle with
    /// the byte range [start, end) to send (None, or an empty range, for HEAD, 304 and the like).
    pub fn respond(&mut self, stream: u32, head: &[&[u8]], body: Option<(B, u64, u64)>) -> Result<(), RespondError> {
        let i = self.find(stream).ok_or(RespondError::NoStream)?;
        if !matches!(self.streams[i].send, Send::Awaiting) {
            return Err(RespondError::AlreadyAnswered);
        }
        let body = body.filter(|(_, start, end)| end > start);
        let total: usize = head.iter().map(|p| p.len()).sum();
        let max = self.peer_max_frame;
        let mut done = 0;
        let mut first = true;
        loop {
            let n = (total - done).min(max);
            let last = done + n == total;
            let (kind, mut flags) = if first { (frame::HEADERS, 0) } else { (frame::CONTINUATION, 0) };
            if first && body.is_none() {
                flags |= frame::FLAG_END_STREAM;
            }
            if last {
                flags |= frame::FLAG_END_HEADERS;
            }
            self.q.extend_from_slice(&frame::head_bytes(n, kind, flags, stream));
            copy_parts(head, done, n, &mut self.q);
            done += n;
            first = false;
            if last {
                break;
            }
        }
        let s = &mut self.streams[i];
        match body {
            Some((body, offset, end)) => s.send = Send::Body { body, offset, end },
            None => {
                s.send = Send::Done;
                self.close_if_done(i);
            }
        }
        if self.q.len() > self.limits.max_queued as usize {
            // Heads piling up unread (CVE-2019-9517): the same bound as for control frames.
            self.q.clear();
            self.fail(ErrorCode::EnhanceYourCalm);
        }
        Ok(())
    }

    /// True when `write` has something to give.
    pub fn wants_write(&self) -> bool {
        !self.q.is_empty()
            || (self.phase != Phase::Failed
                && self.send_window > 0
                && self.streams.iter().any(|s| s.remaining() > 0 && s.send_window > 0))
    }

    /// Writes queued frames (all of them: they are bounded by `Limits::max_queued`), then DATA frames while
    /// `budget` bytes allow. Returns the bytes written.
    pub fn write(&mut self, out: &mut impl Out<B>, budget: usize) -> usize {
        let mut n = self.flush_queue(out);
        while self.phase != Phase::Failed && self.send_window > 0 && n + HEADER_LEN < budget {
            let Some(i) = self.next_stream() else { break };
            let room = budget - n - HEADER_LEN;
            let peer_max = self.peer_max_frame as i64;
            let conn_window = self.send_window;
            let s = &mut self.streams[i];
            let len =
                (s.remaining() as i64).min(peer_max).min(conn_window).min(s.send_window).min(room as i64) as usize;
            let Send::Body { body, offset, end } = &mut s.send else { unreachable!("next_stream picks bodies") };
            let last = *offset + len as u64 == *end;
            let flags = if last { frame::FLAG_END_STREAM } else { 0 };
            out.put(&frame::head_bytes(len, frame::DATA, flags, s.id));
            out.put_body(body, *offset, len);
            *offset += len as u64;
            s.send_window -= len as i64;
            s.served = self.tick;
            self.tick += 1;
            self.send_window -= len as i64;
            self.meters.data_sent();
            n += HEADER_LEN + len;
            if last {
                s.send = Send::Done;
                if s.recv_open && s.recv_window <= 0 {
                    // The upload has used its window and we want none of it (§8.1): end it.
                    let id = s.id;
                    self.reset(id, ErrorCode::NoError);
                } else {
                    self.close_if_done(i);
                }
            }
        }
        n + self.flush_queue(out)
    }

    fn flush_queue(&mut self, out: &mut impl Out<B>) -> usize {
        let n = self.q.len();
        if n > 0 {
            out.put(&self.q);
            self.q.clear();
        }
        n
    }

    /// The stream whose DATA goes next: RFC 9218 order among those with body left and window open.
    fn next_stream(&self) -> Option<usize> {
        let mut best: Option<(usize, (u8, bool, u64))> = None;
        for (i, s) in self.streams.iter().enumerate() {
            if s.remaining() == 0 || s.send_window <= 0 {
                continue;
            }
            let k = s.order();
            if best.is_none_or(|(_, b)| k < b) {
                best = Some((i, k));
            }
        }
        best.map(|(i, _)| i)
    }
}
