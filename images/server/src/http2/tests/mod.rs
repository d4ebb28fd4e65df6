//! Tests that drive a whole connection with client frames: protocol conformance (the h2spec groups),
//! flow control and priorities, and the attack defences.

mod conformance;
mod defences;
mod exchange;
mod real_client;

use super::frame::{self, ErrorCode, Head, PREFACE};
use super::hpack::encode;
use super::{Conn, Event, Limits};

pub type Body = &'static [u8];

/// A client that builds frames.
pub struct Client;

impl Client {
    pub fn preface() -> Vec<u8> {
        let mut b = PREFACE.to_vec();
        frame::put(&mut b, frame::SETTINGS, 0, 0, &[]);
        b
    }

    pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        frame::put(&mut b, kind, flags, stream, payload);
        b
    }

    /// A header block for `fields`, each as a literal without indexing (names may be anything).
    pub fn block(fields: &[(&str, &str)]) -> Vec<u8> {
        let mut b = Vec::new();
        for (n, v) in fields {
            b.push(0);
            encode::string(&mut b, n.as_bytes());
            encode::string(&mut b, v.as_bytes());
        }
        b
    }

    pub fn get(path: &str) -> Vec<u8> {
        Client::block(&[(":method", "GET"), (":scheme", "https"), (":path", path), (":authority", "a.example")])
    }

    pub fn headers(stream: u32, end_stream: bool, block: &[u8]) -> Vec<u8> {
        let flags = frame::FLAG_END_HEADERS | if end_stream { frame::FLAG_END_STREAM } else { 0 };
        Client::frame(frame::HEADERS, flags, stream, block)
    }

    pub fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
        let mut p = Vec::new();
        for (id, v) in pairs {
            p.extend_from_slice(&id.to_be_bytes());
            p.extend_from_slice(&v.to_be_bytes());
        }
        Client::frame(frame::SETTINGS, 0, 0, &p)
    }

    pub fn window_update(stream: u32, inc: u32) -> Vec<u8> {
        Client::frame(frame::WINDOW_UPDATE, 0, stream, &inc.to_be_bytes())
    }

    pub fn rst(stream: u32, code: ErrorCode) -> Vec<u8> {
        Client::frame(frame::RST_STREAM, 0, stream, &(code as u32).to_be_bytes())
    }
}

/// A frame the server wrote.
#[derive(Debug, Clone)]
pub struct Frame {
    pub head: Head,
    pub payload: Vec<u8>,
}

impl Frame {
    pub fn code(&self) -> u32 {
        let p = &self.payload;
        let at = if self.head.kind == frame::GOAWAY { 4 } else { 0 };
        u32::from_be_bytes([p[at], p[at + 1], p[at + 2], p[at + 3]])
    }
}

pub fn parse(mut b: &[u8]) -> Vec<Frame> {
    let mut v = Vec::new();
    while let Some(h) = Head::parse(b) {
        let end = 9 + h.len as usize;
        v.push(Frame { head: h, payload: b[9..end].to_vec() });
        b = &b[end..];
    }
    assert!(b.is_empty(), "a partial frame was written");
    v
}

/// A server connection whose "core" answers every request from `site`, with a body unless HEAD.
pub struct Server {
    pub conn: Conn<Body>,
    pub site: fn(&[u8]) -> (u16, Body),
    /// Stream ids of the requests seen, in order.
    pub requests: Vec<u32>,
    pub buffered: Vec<u8>,
    /// The code of the first GOAWAY written, whenever it was.
    pub goaway: Option<u32>,
}

pub const PAGE: &[u8] = b"<!doctype html><title>hello</title>";

impl Server {
    pub fn new() -> Server {
        Server::with(Limits::default())
    }

    pub fn with(limits: Limits) -> Server {
        Server {
            conn: Conn::new(limits),
            site: |_| (200, PAGE),
            requests: Vec::new(),
            buffered: Vec::new(),
            goaway: None,
        }
    }

    /// Feeds bytes as a transport would: appended to what was left, then `recv` until no progress.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.buffered.extend_from_slice(bytes);
        let mut at = 0;
        loop {
            let (used, ev) = self.conn.recv(&self.buffered[at..]);
            at += used;
            let answer = match ev {
                Some(Event::Request(r)) => {
                    let (status, body) = (self.site)(r.path());
                    let head_only = r.method() == b"HEAD";
                    Some((r.stream, status, body, head_only))
                }
                None => None,
            };
            match answer {
                Some((id, status, body, head_only)) => {
                    self.requests.push(id);
                    let mut head = Vec::new();
                    encode::status(&mut head, status);
                    encode::field(&mut head, b"content-length", body.len().to_string().as_bytes());
                    let b = if head_only { None } else { Some((body, 0, body.len() as u64)) };
                    self.conn.respond(id, &[&head], b).unwrap();
                }
                None if used == 0 => break,
                None => {}
            }
        }
        self.buffered.drain(..at);
    }

    /// What the server writes with a budget.
    pub fn out(&mut self, budget: usize) -> Vec<Frame> {
        let mut o = Vec::new();
        self.conn.write(&mut o, budget);
        let frames = parse(&o);
        self.goaway = self.goaway.or(goaway(&frames));
        frames
    }

    pub fn out_all(&mut self) -> Vec<Frame> {
        self.out(usize::MAX / 2)
    }

    /// A connection past the preface and its SETTINGS exchange, output drained.
    pub fn open() -> Server {
        Server::open_with(Limits::default())
    }

    pub fn open_with(limits: Limits) -> Server {
        let mut s = Server::with(limits);
        s.feed(&Client::preface());
        s.out_all();
        s
    }
}

pub fn goaway(frames: &[Frame]) -> Option<u32> {
    frames.iter().find(|f| f.head.kind == frame::GOAWAY).map(Frame::code)
}

pub fn rst(frames: &[Frame], stream: u32) -> Option<u32> {
    frames.iter().find(|f| f.head.kind == frame::RST_STREAM && f.head.stream == stream).map(Frame::code)
}

pub fn data(frames: &[Frame], stream: u32) -> Vec<u8> {
    frames
        .iter()
        .filter(|f| f.head.kind == frame::DATA && f.head.stream == stream)
        .flat_map(|f| f.payload.clone())
        .collect()
}
