//! Raw HTTP/2 frames for the wired-server tests (h2c on real sockets): write frames, read them back until one
//! of interest or the server's close.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};

use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use super::Server;
use hyperstatic_server::http2::hpack::encode;

pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub const DATA: u8 = 0;
pub const HEADERS: u8 = 1;
pub const RST_STREAM: u8 = 3;
pub const SETTINGS: u8 = 4;
pub const PING: u8 = 6;
pub const GOAWAY: u8 = 7;
pub const WINDOW_UPDATE: u8 = 8;
pub const CONTINUATION: u8 = 9;
pub const END_STREAM: u8 = 1;
pub const END_HEADERS: u8 = 4;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;
pub const REFUSED_STREAM: u32 = 0x7;
pub const NO_ERROR: u32 = 0x0;
pub const SETTINGS_TIMEOUT: u32 = 0x4;

pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let n = payload.len();
    let mut f = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

pub fn request_block(path: &str) -> Vec<u8> {
    let mut b = Vec::new();
    for (n, v) in [(":method", "GET"), (":scheme", "http"), (":path", path), (":authority", "t")] {
        encode::field(&mut b, n.as_bytes(), v.as_bytes());
    }
    b
}

/// A connection that sent the preface and SETTINGS (with `settings`, 6 bytes each) and acknowledged ours.
pub fn h2c(s: &Server, settings: &[u8]) -> TcpStream {
    let mut c = s.connect();
    let mut hello = PREFACE.to_vec();
    hello.extend(frame(SETTINGS, 0, 0, settings));
    hello.extend(frame(SETTINGS, 1, 0, &[]));
    c.write_all(&hello).unwrap();
    c
}

/// Reads frames until `stop` holds for one (returned) or the server closes the connection (None).
pub fn read_until(c: &mut impl Read, mut stop: impl FnMut(u8, u8, u32, &[u8]) -> bool) -> Option<(u8, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        while buf.len() >= 9 {
            let len = (buf[0] as usize) << 16 | (buf[1] as usize) << 8 | buf[2] as usize;
            if buf.len() < 9 + len {
                break;
            }
            let (kind, flags) = (buf[3], buf[4]);
            let stream = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
            let payload = buf[9..9 + len].to_vec();
            buf.drain(..9 + len);
            if stop(kind, flags, stream, &payload) {
                return Some((kind, payload));
            }
        }
        match c.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
            Err(e) => panic!("no frame and no close: {e}"),
        }
    }
}

/// Reads until the server's GOAWAY: (last stream id, error code).
pub fn goaway(c: &mut TcpStream) -> (u32, u32) {
    let (_, p) = read_until(c, |k, _, _, _| k == GOAWAY).expect("a GOAWAY before the close");
    let last = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff;
    (last, u32::from_be_bytes([p[4], p[5], p[6], p[7]]))
}

/// Reads until the server's GOAWAY and returns its error code; the connection must then close.
pub fn goaway_code(c: &mut TcpStream) -> u32 {
    let (_, code) = goaway(c);
    assert!(read_until(c, |_, _, _, _| false).is_none(), "the connection closes after the GOAWAY");
    code
}

/// For the `h2` crate's client (tokio IO) against the real binary: the dev-dependency has tokio's runtime, not
/// its network driver.
/// Connects to `port` and returns the client's end of an in-memory pipe whose other end two threads copy to and
/// from the socket.
pub fn bridged(port: u16, rt: &tokio::runtime::Runtime) -> DuplexStream {
    let (client_io, bridge_io) = tokio::io::duplex(64 * 1024);
    let (mut from_pipe, mut to_pipe) = tokio::io::split(bridge_io);
    let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_nodelay(true).unwrap();
    let (mut rd, mut wr) = (tcp.try_clone().unwrap(), tcp);
    let h = rt.handle().clone();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = rd.read(&mut buf).unwrap_or(0);
            if n == 0 || h.block_on(to_pipe.write_all(&buf[..n])).is_err() {
                let _ = h.block_on(to_pipe.shutdown());
                return;
            }
        }
    });
    let h = rt.handle().clone();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = h.block_on(from_pipe.read(&mut buf)).unwrap_or(0);
            if n == 0 || wr.write_all(&buf[..n]).is_err() {
                let _ = wr.shutdown(Shutdown::Write);
                return;
            }
        }
    });
    client_io
}
