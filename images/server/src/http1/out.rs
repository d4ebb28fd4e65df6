//! Response output for one batch of (pipelined) requests: header bytes and small bodies are copied into one
//! buffer, larger bodies are referenced in place (table memory) or sent from a file with sendfile. The whole
//! batch leaves with one writev; whatever the socket does not take moves to the connection's `Pending`.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::os::fd::RawFd;
use std::sync::Arc;

use crate::sys::io;
use crate::sys::mem::Borrowed;

/// Bodies up to this size are copied next to their headers (one iovec for the whole response).
pub const COPY_BODY_MAX: usize = 16 * 1024;
const IOV_BATCH: usize = 64;

#[derive(Clone, Copy, Debug)]
pub enum Seg {
    /// Bytes `start..end` of the batch buffer (or of `Pending::bytes`).
    Buf { start: usize, end: usize },
    /// Bytes owned by the content table (kept alive by the batch's or `Pending`'s `Arc<Table>`).
    Mem(Borrowed),
    /// A file range sent with sendfile.
    File { fd: RawFd, off: u64, len: u64 },
}

/// The worker's batch buffers, reused for every batch (no allocation once warmed up).
pub struct Out {
    pub buf: Vec<u8>,
    pub segs: Vec<Seg>,
    /// Start of the buffer run not yet covered by a segment.
    run_start: usize,
    /// Files opened for this batch (a pool's disk bodies, `own_file`): closed when the batch is sent, or moved
    /// into the `Pending` that sends the rest.
    pub files: Vec<std::fs::File>,
}

impl Default for Out {
    fn default() -> Self {
        Out { buf: Vec::with_capacity(256 * 1024), segs: Vec::with_capacity(256), run_start: 0, files: Vec::new() }
    }
}

impl Out {
    pub fn clear(&mut self) {
        self.buf.clear();
        self.segs.clear();
        self.run_start = 0;
        self.files.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.segs.is_empty() && self.buf.is_empty()
    }

    /// Closes the open buffer run into a segment so that a reference segment can follow.
    fn seal(&mut self) {
        let end = self.buf.len();
        if end > self.run_start {
            self.segs.push(Seg::Buf { start: self.run_start, end });
            self.run_start = end;
        }
    }

    #[inline]
    pub fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    #[inline]
    pub fn num(&mut self, mut n: u64) {
        let mut tmp = [0u8; 20];
        let mut i = tmp.len();
        loop {
            i -= 1;
            tmp[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.buf.extend_from_slice(&tmp[i..]);
    }

    /// Adds a body that lives in table memory.
    pub fn body(&mut self, b: &[u8]) {
        if b.len() <= COPY_BODY_MAX {
            self.buf.extend_from_slice(b);
        } else {
            self.seal_and_push(Seg::Mem(Borrowed::new(b)));
        }
    }

    pub fn file(&mut self, fd: RawFd, off: u64, len: u64) {
        if len > 0 {
            self.seal_and_push(Seg::File { fd, off, len });
        }
    }

    /// A file range from a file opened for this response (a pool's disk body, a previous deploy's file). As `body`
    /// does for memory, up to `COPY_BODY_MAX` is copied beside its head: one `pread`, and the file closes at once
    /// (instead of a `sendfile` after a head that had to leave apart, with MSG_MORE); a bigger range is sent with
    /// sendfile from the file, which the batch keeps open until sent. False, with nothing added, when a copied
    /// file gives fewer bytes than asked (it shrank since its metadata was checked) or fails.
    pub fn own_file(&mut self, f: std::fs::File, off: u64, len: u64) -> bool {
        use std::os::fd::AsRawFd;
        if len as usize > COPY_BODY_MAX {
            self.file(f.as_raw_fd(), off, len);
            self.files.push(f);
            return true;
        }
        let (at, want) = (self.buf.len(), len as usize);
        let mut got = 0;
        while got < want {
            match io::pread_append(f.as_raw_fd(), &mut self.buf, off + got as u64, want - got) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if got < want {
            self.buf.truncate(at);
            return false;
        }
        true
    }

    fn seal_and_push(&mut self, s: Seg) {
        self.seal();
        self.segs.push(s);
    }

    /// Finalises the segment list (the trailing buffer run).
    pub fn finish(&mut self) {
        self.seal();
    }
}

/// Output that the socket did not accept yet. Holds the table so referenced bodies and files stay alive
/// even if a reload swapped it out.
/// An owner of table memory, type-erased so that a pool's snapshot (pool/, a layer above) can be held too.
pub type Hold = Arc<dyn std::any::Any + Send + Sync>;

pub struct Pending {
    pub bytes: Vec<u8>,
    pub segs: VecDeque<Seg>,
    /// What keeps the bodies the segments point into alive: the single site's table, or a pool's snapshot
    /// (whose slots hold the tables of every site the batch answered from).
    pub _hold: Hold,
    /// Files opened for the batch (`Out::files`) its segments send from.
    pub _files: Vec<std::fs::File>,
}

pub enum WriteResult {
    Done,
    Blocked,
    Failed,
}

/// Marks `n` bytes from `segs[*cur]` on as sent: whole segments are stepped over, a partly sent one is trimmed.
pub fn advance(segs: &mut [Seg], cur: &mut usize, mut n: usize) {
    while n > 0 {
        let l = match segs[*cur] {
            Seg::Buf { start, end } => end - start,
            Seg::Mem(m) => m.len(),
            Seg::File { len, .. } => len as usize,
        };
        if n >= l {
            n -= l;
            *cur += 1;
        } else {
            segs[*cur] = match segs[*cur] {
                Seg::Buf { start, end } => Seg::Buf { start: start + n, end },
                Seg::Mem(m) => Seg::Mem(m.skip(n)),
                Seg::File { fd, off, len } => Seg::File { fd, off: off + n as u64, len: len - n as u64 },
            };
            n = 0;
        }
    }
}

/// Writes segments starting at `segs[*cur]` (advancing it and trimming partially written segments).
pub fn write_segs(fd: RawFd, base: &[u8], segs: &mut [Seg], cur: &mut usize, written: &mut u64) -> WriteResult {
    let mut iov: [IoSlice<'_>; IOV_BATCH] = [IoSlice::new(&[]); IOV_BATCH];
    while *cur < segs.len() {
        if let Seg::File { fd: ffd, off, len } = segs[*cur] {
            let n = match io::sendfile(fd, ffd, off, len) {
                Ok(0) => return WriteResult::Failed, // file shrank under us
                Ok(n) => n as u64,
                Err(e) => match e.raw_os_error() {
                    Some(libc::EAGAIN) => return WriteResult::Blocked,
                    Some(libc::EINTR) => continue,
                    _ => return WriteResult::Failed,
                },
            };
            *written += n;
            if n == len {
                *cur += 1;
            } else {
                segs[*cur] = Seg::File { fd: ffd, off: off + n, len: len - n };
            }
            continue;
        }
        let mut k = 0;
        let mut i = *cur;
        while i < segs.len() && k < IOV_BATCH {
            iov[k] = match segs[i] {
                Seg::Buf { start, end } => IoSlice::new(&base[start..end]),
                Seg::Mem(m) => IoSlice::new(m.bytes()),
                Seg::File { .. } => break,
            };
            k += 1;
            i += 1;
        }
        // A file range follows: MSG_MORE holds these bytes (the headers) back so they leave in one segment with
        // the start of the body that sendfile sends next. Accepted sockets have TCP_NODELAY, which would otherwise
        // push the headers alone: one more packet per response and one more wake-up of the reader.
        let more = matches!(segs.get(i), Some(Seg::File { .. }));
        let n = match io::write_gather(fd, &iov[..k], more) {
            Ok(n) => n,
            Err(e) => match e.raw_os_error() {
                Some(libc::EAGAIN) => return WriteResult::Blocked,
                Some(libc::EINTR) => continue,
                _ => return WriteResult::Failed,
            },
        };
        *written += n as u64;
        advance(segs, cur, n);
        // Partially accepted: the socket buffer is full.
        if *cur < i {
            return WriteResult::Blocked;
        }
    }
    WriteResult::Done
}

impl Pending {
    /// Moves the unwritten rest of a batch into an owned Pending.
    pub fn from_rest(base: &[u8], segs: &[Seg], hold: Hold, files: Vec<std::fs::File>) -> Box<Pending> {
        let mut bytes = Vec::new();
        let mut out = VecDeque::with_capacity(segs.len());
        for s in segs {
            match *s {
                Seg::Buf { start, end } => {
                    let b = bytes.len();
                    bytes.extend_from_slice(&base[start..end]);
                    out.push_back(Seg::Buf { start: b, end: bytes.len() });
                }
                other => out.push_back(other),
            }
        }
        Box::new(Pending { bytes, segs: out, _hold: hold, _files: files })
    }

    pub fn write(&mut self, fd: RawFd, written: &mut u64) -> WriteResult {
        let segs = self.segs.make_contiguous();
        let mut cur = 0;
        let r = write_segs(fd, &self.bytes, segs, &mut cur, written);
        self.segs.drain(..cur);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::site::content::Table;

    #[test]
    fn small_bodies_merge_into_one_segment() {
        let mut o = Out::default();
        o.bytes(b"HTTP/1.1 200 OK\r\n\r\n");
        o.body(b"hello");
        o.bytes(b"HTTP/1.1 200 OK\r\n\r\n");
        o.body(b"world");
        o.finish();
        assert_eq!(o.segs.len(), 1);
        o.clear();
        o.bytes(b"HTTP/1.1 200 OK\r\n\r\nhelloHTTP/1.1 200 OK\r\n\r\nworld");
        let big = vec![7u8; COPY_BODY_MAX + 1];
        o.bytes(b"H");
        o.body(&big);
        o.bytes(b"T");
        o.finish();
        assert!(matches!(o.segs[0], Seg::Buf { start: 0, .. }));
        assert!(matches!(o.segs[1], Seg::Mem { .. }));
        assert!(matches!(o.segs[2], Seg::Buf { .. }));
        let Seg::Buf { end, .. } = o.segs[0] else { panic!() };
        assert_eq!(&o.buf[..end], b"HTTP/1.1 200 OK\r\n\r\nhelloHTTP/1.1 200 OK\r\n\r\nworldH");
    }

    #[test]
    fn a_small_file_range_is_read_beside_its_head_and_a_short_file_adds_nothing() {
        let path = std::env::temp_dir().join(format!("hs-out-copy-{}", std::process::id()));
        std::fs::write(&path, b"0123456789").unwrap();
        let open = || std::fs::File::open(&path).unwrap();
        let mut o = Out::default();
        o.bytes(b"HEAD:");
        assert!(o.own_file(open(), 2, 5));
        o.finish();
        assert_eq!((o.segs.len(), &o.buf[..]), (1, &b"HEAD:23456"[..]), "one buffer run, no file segment");
        assert!(o.files.is_empty(), "nothing kept open for the send");
        // The file ends before the range does (it shrank since its metadata was read): nothing is added.
        assert!(!o.own_file(open(), 8, 5));
        assert!(!o.own_file(open(), 11, 1));
        assert_eq!(&o.buf[..], b"HEAD:23456");
        // Past COPY_BODY_MAX the range is a file segment and the batch keeps the file until it is sent.
        assert!(o.own_file(open(), 0, COPY_BODY_MAX as u64 + 1));
        assert!(matches!(o.segs.last(), Some(Seg::File { .. })) && o.files.len() == 1);
        std::fs::remove_file(path).unwrap();
    }

    /// Segments the kernel has sent on a TCP socket (tcp_info), pure ACKs included.
    fn segs_out(fd: RawFd) -> u32 {
        crate::sys::socket::tcp_segs_out(fd).unwrap()
    }

    #[test]
    fn headers_before_a_file_body_leave_in_one_segment_with_it() {
        use std::io::Read;
        use std::net::{TcpListener, TcpStream};
        use std::os::fd::AsRawFd;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        server.set_nodelay(true).unwrap(); // as every accepted connection of the server
        let body: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
        let file = tempfile_with(&body);
        let mut o = Out::default();
        o.bytes(b"HTTP/1.1 200 OK\r\nContent-Length: 8192\r\n\r\n");
        o.file(file.as_raw_fd(), 0, body.len() as u64);
        o.finish();
        let before = segs_out(server.as_raw_fd());
        let (mut cur, mut written) = (0, 0);
        let r = write_segs(server.as_raw_fd(), &o.buf, &mut o.segs, &mut cur, &mut written);
        assert!(matches!(r, WriteResult::Done));
        // without MSG_MORE the headers go alone (TCP_NODELAY) and the body follows: two segments
        assert_eq!(segs_out(server.as_raw_fd()) - before, 1, "headers and an 8 KiB body fit one loopback segment");
        let mut got = vec![0u8; o.buf.len() + body.len()];
        client.read_exact(&mut got).unwrap();
        assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n") && got.ends_with(&body));
    }

    /// An unlinked temporary file holding `bytes` (sendfile needs a real file).
    fn tempfile_with(bytes: &[u8]) -> std::fs::File {
        use std::io::Write;
        let path = std::env::temp_dir().join(format!("out-rs-test-{}", std::process::id()));
        let mut f = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    #[test]
    fn writes_through_a_pipe_and_resumes() {
        let (r, w) = io::pipe();
        let fds = [r, w];
        let mut o = Out::default();
        let big = vec![b'x'; 200_000];
        o.bytes(b"head");
        o.body(&big);
        o.bytes(b"tail");
        o.finish();
        let mut cur = 0;
        let mut written = 0;
        let r = write_segs(fds[1], &o.buf, &mut o.segs, &mut cur, &mut written);
        assert!(matches!(r, WriteResult::Blocked), "a pipe buffer is smaller than 200 KB");
        let mut p = Pending::from_rest(&o.buf, &o.segs[cur..], Arc::new(Table::default()), Vec::new());
        let mut got = Vec::new();
        let mut buf = vec![0u8; 65536];
        loop {
            if let Ok(n) = io::read(fds[0], &mut buf) {
                got.extend_from_slice(&buf[..n]);
            }
            match p.write(fds[1], &mut written) {
                WriteResult::Done => break,
                WriteResult::Blocked => continue,
                WriteResult::Failed => panic!("write failed"),
            }
        }
        loop {
            match io::read(fds[0], &mut buf) {
                Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
                _ => break,
            }
        }
        assert_eq!(got.len(), 200_008);
        assert_eq!(written, 200_008);
        assert!(got.starts_with(b"headxx") && got.ends_with(b"xxtail"));
        crate::sys::close(fds[0]);
        crate::sys::close(fds[1]);
    }
}
