//! Reading and writing descriptors: read, pread, the gathered write of a batch (write, writev or sendmsg with
//! MSG_MORE), sendfile, and a socket as `Read`/`Write` for rustls.

use std::io::{self, IoSlice, Read, Write};
use std::os::fd::RawFd;

#[inline]
fn result(n: isize) -> io::Result<usize> {
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// read(2) into `buf`.
#[inline]
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: reading at most buf.len() bytes into a valid buffer.
    result(unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) })
}

/// pread(2): a file range into `buf`, the file position untouched.
#[inline]
pub fn pread(fd: RawFd, buf: &mut [u8], off: u64) -> io::Result<usize> {
    // SAFETY: reading at most buf.len() bytes into a valid buffer.
    result(unsafe { libc::pread(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), off as i64) })
}

/// pread(2) of up to `len` bytes of `fd` at `off`, appended to `buf` (its length grows by what was read; nothing
/// is zero-filled first). A short count is the file's end.
#[inline]
pub fn pread_append(fd: RawFd, buf: &mut Vec<u8>, off: u64, len: usize) -> io::Result<usize> {
    buf.reserve(len);
    let at = buf.len();
    // SAFETY: the kernel writes at most `len` bytes into the reserved spare capacity past `at`; the length grows
    // by exactly the count it reports written, so no byte that was not written becomes part of the vector.
    let n = result(unsafe { libc::pread(fd, buf.as_mut_ptr().add(at) as *mut libc::c_void, len, off as i64) })?;
    unsafe { buf.set_len(at + n) };
    Ok(n)
}

/// write(2) of one buffer.
#[inline]
pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: writing buf.len() bytes of a valid buffer.
    result(unsafe { libc::write(fd, buf.as_ptr() as *const libc::c_void, buf.len()) })
}

/// Writes `bufs` in one call: write(2) for one, writev(2) for several, sendmsg(2) with MSG_MORE when `more` (more
/// bytes follow at once: the kernel holds these back to leave in one segment with them). At most 1024 entries.
#[inline]
pub fn write_gather(fd: RawFd, bufs: &[IoSlice<'_>], more: bool) -> io::Result<usize> {
    let k = bufs.len().min(1024);
    if k == 1 && !more {
        return write(fd, &bufs[0]);
    }
    // SAFETY: IoSlice is guaranteed ABI-compatible with iovec on Unix and every entry points into live memory for
    // the duration of the call; msghdr is plain data for which all-zero is valid, and it lives until sendmsg
    // returns.
    let n = unsafe {
        if more {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
            msg.msg_iovlen = k as _;
            libc::sendmsg(fd, &msg, libc::MSG_MORE)
        } else {
            libc::writev(fd, bufs.as_ptr() as *const libc::iovec, k as i32)
        }
    };
    result(n)
}

/// sendfile(2): up to `len` bytes of `file` at `off` to `sock` (1 GiB at most per call), the file position untouched.
#[inline]
pub fn sendfile(sock: RawFd, file: RawFd, off: u64, len: u64) -> io::Result<usize> {
    let mut o = off as libc::off_t;
    // SAFETY: valid out-pointer for the offset; sendfile reads `file` at `o` without moving its position.
    result(unsafe { libc::sendfile(sock, file, &mut o, len.min(1 << 30) as usize) })
}

/// A socket as `Read`/`Write` for rustls, without owning the descriptor.
pub struct SockIo(pub RawFd);

impl Read for SockIo {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        read(self.0, buf)
    }
}

impl Write for SockIo {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        write(self.0, buf)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        // At most IOV_MAX entries come from rustls (it writes a bounded number of queued records at once).
        if bufs.is_empty() {
            return Ok(0);
        }
        write_gather(self.0, bufs, false)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A non-blocking eventfd (a counter another thread can poll): a worker wakes the pool thread with one write when a
/// cold site is first asked for (pool/). -1 when the kernel refuses one.
pub fn eventfd() -> RawFd {
    // SAFETY: eventfd(2) takes an initial value and flags; it returns a new descriptor or -1.
    unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) }
}

/// A non-blocking pipe (read end, write end), for tests of the writers.
#[cfg(test)]
pub fn pipe() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into a two-element array.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", io::Error::last_os_error());
    (fds[0], fds[1])
}
