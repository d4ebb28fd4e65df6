//! The handlers for each received frame type (RFC 9113 §6). Each returns `Ok(Some(ready))` when a request became
//! ready, `Err(code)` for a connection error; stream errors are answered here with RST_STREAM.

use super::conn::{Block, Conn, Phase, Ready};
use super::frame::{self, ErrorCode as E, Head, MAX_WINDOW};
use super::hpack::DecodeError;
use super::request::{self, RequestHead};
use super::stream::Stream;

type R = Result<Option<Ready>, E>;

/// `:status: 431` as HPACK (a literal with the static name `:status`; `encode::status(431)`, checked in the
/// tests), so a refusal allocates nothing.
pub(super) const STATUS_431: [u8; 5] = [0x08, 0x03, b'4', b'3', b'1'];

fn u32_at(p: &[u8]) -> u32 {
    u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff
}

impl<B> Conn<B> {
    pub(super) fn frame(&mut self, h: Head, p: &[u8]) -> R {
        if self.phase == Phase::FirstSettings {
            if h.kind != frame::SETTINGS || h.has(frame::FLAG_ACK) {
                return Err(E::Protocol);
            }
            self.phase = Phase::Open;
        }
        if let Some(b) = &self.cont {
            // §6.10: a header block is contiguous; anything else in between is a PROTOCOL_ERROR.
            if h.kind != frame::CONTINUATION || h.stream != b.stream {
                return Err(E::Protocol);
            }
        }
        match h.kind {
            frame::DATA => self.on_data(h, p).map(|_| None),
            frame::HEADERS => self.on_headers(h, p),
            frame::CONTINUATION => self.on_continuation(h, p),
            frame::PRIORITY => self.on_priority(h, p).map(|_| None),
            frame::RST_STREAM => self.on_rst(h, p).map(|_| None),
            frame::SETTINGS => self.on_settings(h, p).map(|_| None),
            frame::PING => self.on_ping(h, p).map(|_| None),
            frame::GOAWAY => self.on_goaway(h, p).map(|_| None),
            frame::WINDOW_UPDATE => self.on_window_update(h, p).map(|_| None),
            frame::PRIORITY_UPDATE => self.on_priority_update(h, p).map(|_| None),
            // §8.4: clients cannot push.
            frame::PUSH_PROMISE => Err(E::Protocol),
            // §5.5: unknown types are ignored (but not free).
            _ => self.charge().map(|_| None),
        }
    }

    fn on_data(&mut self, h: Head, p: &[u8]) -> Result<(), E> {
        if h.stream == 0 {
            return Err(E::Protocol);
        }
        let data = frame::unpad(h.flags, p).ok_or(E::Protocol)?;
        // Connection flow control counts the whole payload, padding included (§6.9.1), whatever the stream.
        let n = h.len as i64;
        self.recv_window -= n;
        if self.recv_window < 0 {
            return Err(E::FlowControl);
        }
        // We discard request bodies, so the connection window is given back as it is used.
        self.recv_unacked += n;
        if self.recv_unacked >= frame::DEFAULT_WINDOW / 2 {
            frame::put_window_update(&mut self.q, 0, self.recv_unacked as u32);
            self.recv_window += self.recv_unacked;
            self.recv_unacked = 0;
        }
        if h.stream > self.max_client_id {
            return Err(E::Protocol);
        }
        let end_stream = h.has(frame::FLAG_END_STREAM);
        let Some(i) = self.find(h.stream) else {
            self.charge()?;
            self.reset(h.stream, E::StreamClosed);
            return Ok(());
        };
        let s = &mut self.streams[i];
        if !s.recv_open {
            self.reset(h.stream, E::StreamClosed);
            return Ok(());
        }
        s.recv_window -= n;
        if s.recv_window < 0 {
            self.reset(h.stream, E::FlowControl);
            return Ok(());
        }
        s.received += data.len() as u64;
        // §8.1.1: a body that disagrees with content-length is malformed.
        if let Some(cl) = s.content_length {
            if s.received > cl || (end_stream && s.received != cl) {
                self.reset(h.stream, E::Protocol);
                return Ok(());
            }
        }
        if end_stream {
            s.recv_open = false;
            self.close_if_done(i);
        } else if s.send_done() {
            // The response is complete: stop the upload without error (§8.1).
            self.reset(h.stream, E::NoError);
        } else if data.is_empty() {
            // CVE-2019-9518: empty DATA frames do nothing.
            self.charge()?;
        }
        Ok(())
    }

    fn on_headers(&mut self, h: Head, p: &[u8]) -> R {
        if h.stream == 0 || h.stream.is_multiple_of(2) {
            return Err(E::Protocol);
        }
        let p = frame::unpad(h.flags, p).ok_or(E::Protocol)?;
        let (frag, self_dependent) = if h.has(frame::FLAG_PRIORITY) {
            if p.len() < 5 {
                return Err(E::FrameSize);
            }
            (&p[5..], u32_at(p) == h.stream)
        } else {
            (p, false)
        };
        let b = Block { stream: h.stream, end_stream: h.has(frame::FLAG_END_STREAM), frames: 1, self_dependent };
        self.cont = Some(b);
        if h.has(frame::FLAG_END_HEADERS) {
            return self.block_done(frag);
        }
        if frag.is_empty() {
            self.charge()?;
        }
        self.block.clear();
        self.block.extend_from_slice(frag);
        Ok(None)
    }

    fn on_continuation(&mut self, h: Head, p: &[u8]) -> R {
        // Without a block in progress: §6.10 PROTOCOL_ERROR (idle, closed or stream 0 alike).
        let Some(b) = self.cont.as_mut() else { return Err(E::Protocol) };
        b.frames += 1;
        // The CONTINUATION flood (2024): bound the block in bytes and in frames.
        if b.frames > self.limits.max_block_frames || self.block.len() + p.len() > self.limits.max_header_block as usize
        {
            return Err(E::EnhanceYourCalm);
        }
        if !h.has(frame::FLAG_END_HEADERS) {
            if p.is_empty() {
                self.charge()?;
            }
            self.block.extend_from_slice(p);
            return Ok(None);
        }
        let mut blk = std::mem::take(&mut self.block);
        blk.extend_from_slice(p);
        let r = self.block_done(&blk);
        blk.clear();
        self.block = blk;
        r
    }

    /// A whole header block for `self.cont`: decode it (always, to keep HPACK in step), then open, refuse,
    /// ignore or reject the stream. Every stream not opened (ignored after our GOAWAY, refused, 431, malformed)
    /// is charged to the reset meter, so a peer cannot make us decode block after block for nothing; a block
    /// whose fields nobody will read is decoded counting only.
    fn block_done(&mut self, blk: &[u8]) -> R {
        let b = self.cont.take().expect("a block in progress");
        let id = b.stream;
        self.fields.clear();
        let new = id > self.max_client_id && self.find(id).is_none();
        let ignored = new && self.goaway.is_some_and(|last| id > last);
        let refused = new && self.streams.len() >= self.limits.max_concurrent_streams as usize;
        if ignored || refused {
            self.fields.count_only();
        }
        self.decoder.decode(blk, &mut self.fields).map_err(|e| match e {
            DecodeError::Compression(_) => E::Compression,
            DecodeError::Amplified => E::EnhanceYourCalm,
        })?;
        if let Some(i) = self.find(id) {
            return self.trailers(i, b.end_stream);
        }
        if id <= self.max_client_id {
            // §5.1: a stream we closed is STREAM_CLOSED; a lower id never used is an unexpected id (§5.1.1).
            return Err(if self.closed.contains(id) { E::StreamClosed } else { E::Protocol });
        }
        self.max_client_id = id;
        if ignored {
            // After our GOAWAY, new streams are ignored (§6.8).
            return self.refused();
        }
        if b.self_dependent {
            self.reset(id, E::Protocol);
            return self.refused();
        }
        if refused {
            self.reset(id, E::RefusedStream);
            return self.refused();
        }
        if self.fields.overflowed() {
            // §10.5.1: over SETTINGS_MAX_HEADER_LIST_SIZE (an HPACK bomb ends here too): 431, no body.
            let flags = frame::FLAG_END_HEADERS | frame::FLAG_END_STREAM;
            frame::put(&mut self.q, frame::HEADERS, flags, id, &STATUS_431);
            if !b.end_stream {
                frame::put_rst(&mut self.q, id, E::NoError);
            }
            self.closed.add(id);
            return self.refused();
        }
        let p = match request::check_request(&self.fields) {
            Ok(p) => p,
            Err(_) => {
                self.reset(id, E::Protocol);
                return self.refused();
            }
        };
        if b.end_stream && p.content_length.is_some_and(|cl| cl != 0) {
            self.reset(id, E::Protocol);
            return self.refused();
        }
        let mut s = Stream::new(id, !b.end_stream, self.peer_initial_window, self.limits.initial_window as i64);
        s.content_length = p.content_length;
        s.priority = RequestHead::new(id, b.end_stream, &self.fields, p).priority();
        self.streams.push(s);
        self.meters.opened(&self.limits);
        Ok(Some((id, b.end_stream, p)))
    }

    /// A stream we did not open: charged to the reset meter; over its budget, ENHANCE_YOUR_CALM.
    fn refused(&mut self) -> R {
        if self.meters.reset(&self.limits) {
            Ok(None)
        } else {
            Err(E::EnhanceYourCalm)
        }
    }

    /// A second header block on an open stream: trailers, which must end the stream (§8.1).
    fn trailers(&mut self, i: usize, end_stream: bool) -> R {
        let s = &mut self.streams[i];
        let id = s.id;
        if !s.recv_open {
            self.reset(id, E::StreamClosed);
        } else if !end_stream
            || request::check_trailers(&self.fields).is_err()
            || s.content_length.is_some_and(|cl| cl != s.received)
        {
            self.reset(id, E::Protocol);
        } else {
            s.recv_open = false;
            self.close_if_done(i);
        }
        Ok(None)
    }

    fn on_priority(&mut self, h: Head, p: &[u8]) -> Result<(), E> {
        if h.stream == 0 {
            return Err(E::Protocol);
        }
        if p.len() != 5 {
            self.reset(h.stream, E::FrameSize);
            return Ok(());
        }
        if u32_at(p) == h.stream {
            self.reset(h.stream, E::Protocol);
            return Ok(());
        }
        self.charge()
    }

    fn on_rst(&mut self, h: Head, p: &[u8]) -> Result<(), E> {
        if h.stream == 0 {
            return Err(E::Protocol);
        }
        if p.len() != 4 {
            return Err(E::FrameSize);
        }
        if h.stream > self.max_client_id {
            return Err(E::Protocol);
        }
        let Some(i) = self.find(h.stream) else { return self.charge() };
        let cancelled = !self.streams[i].send_done();
        self.streams.swap_remove(i);
        self.closed.add(h.stream);
        // CVE-2023-44487 (rapid reset): streams cancelled before their response ended.
        if cancelled && !self.meters.reset(&self.limits) {
            return Err(E::EnhanceYourCalm);
        }
        Ok(())
    }

    fn on_settings(&mut self, h: Head, p: &[u8]) -> Result<(), E> {
        if h.stream != 0 {
            return Err(E::Protocol);
        }
        if h.has(frame::FLAG_ACK) {
            if !p.is_empty() {
                return Err(E::FrameSize);
            }
            self.settings_acked = true;
            return self.charge();
        }
        if !p.len().is_multiple_of(6) {
            return Err(E::FrameSize);
        }
        for s in p.chunks_exact(6) {
            let v = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
            match u16::from_be_bytes([s[0], s[1]]) {
                // ENABLE_PUSH: 0 or 1 only.
                0x2 if v > 1 => return Err(E::Protocol),
                0x4 => {
                    if v as i64 > MAX_WINDOW {
                        return Err(E::FlowControl);
                    }
                    // §6.9.2: every stream's window moves by the difference, possibly below zero.
                    let delta = v as i64 - self.peer_initial_window;
                    for st in &mut self.streams {
                        st.send_window += delta;
                        if st.send_window > MAX_WINDOW {
                            return Err(E::FlowControl);
                        }
                    }
                    self.peer_initial_window = v as i64;
                }
                0x5 => {
                    if !(frame::DEFAULT_MAX_FRAME..=frame::MAX_FRAME_CEILING).contains(&v) {
                        return Err(E::Protocol);
                    }
                    self.peer_max_frame = v as usize;
                }
                // HEADER_TABLE_SIZE: our encoder never uses the dynamic table. MAX_CONCURRENT_STREAMS: we never
                // open streams. MAX_HEADER_LIST_SIZE: advisory. Unknown ids: ignored (§6.5.2).
                _ => {}
            }
        }
        frame::put(&mut self.q, frame::SETTINGS, frame::FLAG_ACK, 0, &[]);
        self.charge()
    }

    fn on_ping(&mut self, h: Head, p: &[u8]) -> Result<(), E> {
        if h.stream != 0 {
            return Err(E::Protocol);
        }
        if p.len() != 8 {
            return Err(E::FrameSize);
        }
        if !h.has(frame::FLAG_ACK) {
            frame::put(&mut self.q, frame::PING, frame::FLAG_ACK, 0, p);
        }
        self.charge()
    }

    fn on_goaway(&mut self, h: Head, p: &[u8]) -> Result<(), E> {
        if h.stream != 0 {
            return Err(E::Protocol);
        }
        if p.len() < 8 {
            return Err(E::FrameSize);
        }
        self.peer_goaway = true;
        Ok(())
    }

    fn on_window_update(&mut self, h: Head, p: &[u8]) -> Result<(), E> {
        if p.len() != 4 {
            return Err(E::FrameSize);
        }
        let inc = u32_at(p) as i64;
        if h.stream == 0 {
            if inc == 0 {
                return Err(E::Protocol);
            }
            self.send_window += inc;
            if self.send_window > MAX_WINDOW {
                return Err(E::FlowControl);
            }
            return self.charge();
        }
        if h.stream > self.max_client_id {
            return Err(E::Protocol);
        }
        if let Some(i) = self.find(h.stream) {
            let s = &mut self.streams[i];
            if inc == 0 {
                self.reset(h.stream, E::Protocol);
                return Ok(());
            }
            s.send_window += inc;
            if s.send_window > MAX_WINDOW {
                self.reset(h.stream, E::FlowControl);
                return Ok(());
            }
        }
        self.charge()
    }

    /// RFC 9218 §7.1: re-prioritise an open stream; other targets are ignored.
    fn on_priority_update(&mut self, h: Head, p: &[u8]) -> Result<(), E> {
        if h.stream != 0 {
            return Err(E::Protocol);
        }
        if p.len() < 4 {
            return Err(E::FrameSize);
        }
        let id = u32_at(p);
        if id == 0 || id.is_multiple_of(2) {
            return Err(E::Protocol);
        }
        if let Some(i) = self.find(id) {
            let s = &mut self.streams[i];
            s.priority = s.priority.parse(&p[4..]);
        }
        self.charge()
    }
}
