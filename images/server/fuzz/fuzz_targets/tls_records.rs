//! Whatever bytes arrive on the HTTPS port, `tls::stream::fill` (rustls driven over a non-blocking socket, as
//! the workers do it) must neither panic nor loop: it ends with EOF or a failure once the peer's bytes are
//! consumed, and never reports more plaintext than the buffer holds. Seeds are real ClientHellos (TLS 1.3 and
//! 1.2); the certificate and key in testdata/ are throwaway material made for this target only.
#![no_main]

use std::io::Write;
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, OnceLock};

use hyperstatic_server::config::TlsFiles;
use hyperstatic_server::tls::material::{self, Material, Resumption};
use hyperstatic_server::tls::stream::{self, Fill};
use libfuzzer_sys::fuzz_target;

fn config() -> Arc<rustls::ServerConfig> {
    static CONFIG: OnceLock<Arc<rustls::ServerConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let files = TlsFiles {
                cert: "testdata/fuzz-only.crt".into(),
                key: "testdata/fuzz-only.key".into(),
                http2: true,
                http3: false,
            };
            let m = Material {
                cert: include_bytes!("../testdata/fuzz-only.crt").to_vec(),
                key: include_bytes!("../testdata/fuzz-only.key").to_vec(),
            };
            material::build(&files, &m, &Resumption::new().unwrap()).unwrap().config
        })
        .clone()
}

fuzz_target!(|data: &[u8]| {
    // A socket pair for this input: the peer's bytes written and its side shut, ours non-blocking as a worker's.
    let (ours, mut peer) = UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    peer.set_nonblocking(true).unwrap(); // an input too big fails here instead of blocking
    peer.write_all(data).expect("libFuzzer inputs fit a socket buffer");
    peer.shutdown(Shutdown::Write).unwrap();
    let fd = ours.as_raw_fd();
    let mut conn = rustls::ServerConnection::new(config()).unwrap();
    let mut buf = vec![0u8; 16 * 1024];
    let mut rounds = 0;
    loop {
        let (n, why) = stream::fill(&mut conn, fd, &mut buf);
        assert!(n <= buf.len());
        match why {
            Fill::Eof | Fill::Failed => break,
            // The peer's side is shut: everything is readable, so "nothing more for now" cannot happen.
            Fill::Again => panic!("Again with the peer's bytes all delivered"),
            Fill::Full => {}
        }
        rounds += 1;
        assert!(rounds <= data.len() / buf.len() + 2, "fill keeps returning Full");
    }
    let _ = stream::drain(&mut conn, fd);
    // Both ends close when `ours` and `peer` drop.
});
