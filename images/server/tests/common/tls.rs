//! TLS helpers for integration tests: certificates made with the `openssl` CLI (a test CA and P-256 leaves
//! for localhost/127.0.0.1), laid out like a `kubernetes.io/tls` Secret volume (`tls.crt` → `..data/tls.crt`
//! → `..<generation>/tls.crt`, rotated by swapping `..data` atomically), and a rustls client.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

use super::{parse_responses, Response};

/// Runs a tool that must exist here and in CI (the test fails loudly, never skips, when it does not).
pub fn run(cmd: &mut Command) -> std::process::Output {
    cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?} (is it installed?): {e}"))
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = run(Command::new("openssl").current_dir(dir).args(args));
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// `openssl req` arguments that make a new P-256 key, unencrypted, written to the file that follows.
const NEW_P256_KEY: [&str; 6] = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout"];

/// A test CA in `dir` (ca.pem, ca.key).
pub fn make_ca(dir: &Path) -> PathBuf {
    let rest = ["ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=hyperstatic test CA"];
    openssl(dir, &[&["req", "-x509"][..], &NEW_P256_KEY, &rest].concat());
    dir.join("ca.pem")
}

/// A leaf for localhost and 127.0.0.1 signed by the CA in `dir`: `<name>.crt` and `<name>.key`, valid `days`.
pub fn make_leaf(dir: &Path, name: &str, days: u32) -> (PathBuf, PathBuf) {
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    let (crt, key, csr) = (format!("{name}.crt"), format!("{name}.key"), format!("{name}.csr"));
    let subject = format!("/CN={name}");
    openssl(dir, &[&["req"][..], &NEW_P256_KEY, &[&key, "-out", &csr, "-subj", &subject]].concat());
    let (serial, days) = (format!("{}", 1000 + days), days.to_string());
    let sign = ["x509", "-req", "-in", &csr, "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", &serial];
    openssl(dir, &[&sign[..], &["-out", &crt, "-days", &days, "-extfile", "leaf.ext"]].concat());
    (dir.join(crt), dir.join(key))
}

/// A leaf like `make_leaf`'s but valid exactly from `start` to `end` (`YYYYMMDDHHMMSSZ`): one that expired, or one
/// not valid yet. `openssl x509` only counts days from now; `openssl ca` takes both dates, with a throwaway CA
/// database in `dir`.
pub fn make_leaf_dated(dir: &Path, name: &str, start: &str, end: &str) -> (PathBuf, PathBuf) {
    let db = dir.join(format!("{name}-db"));
    std::fs::create_dir_all(&db).unwrap();
    std::fs::write(db.join("index.txt"), "").unwrap();
    std::fs::write(db.join("serial"), "01\n").unwrap();
    let cnf = format!(
        "[ca]\ndefault_ca = t\n[t]\ndatabase = {d}/index.txt\nnew_certs_dir = {d}\nserial = {d}/serial\n\
         default_md = sha256\npolicy = p\nunique_subject = no\n[p]\ncommonName = supplied\n",
        d = db.display()
    );
    std::fs::write(dir.join(format!("{name}.cnf")), cnf).unwrap();
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    let (crt, key, csr, cnf) =
        (format!("{name}.crt"), format!("{name}.key"), format!("{name}.csr"), format!("{name}.cnf"));
    let subject = format!("/CN={name}");
    openssl(dir, &[&["req"][..], &NEW_P256_KEY, &[&key, "-out", &csr, "-subj", &subject]].concat());
    let sign = ["ca", "-batch", "-notext", "-config", &cnf, "-cert", "ca.pem", "-keyfile", "ca.key", "-in", &csr];
    openssl(dir, &[&sign[..], &["-out", &crt, "-startdate", start, "-enddate", end, "-extfile", "leaf.ext"]].concat());
    (dir.join(crt), dir.join(key))
}

/// A Secret-volume-like directory: `tls.crt` and `tls.key` are symlinks through `..data`.
pub struct SecretDir {
    pub dir: PathBuf,
    generation: u32,
}

impl SecretDir {
    pub fn new(dir: &Path, crt: &Path, key: &Path) -> SecretDir {
        std::fs::create_dir_all(dir).unwrap();
        let mut s = SecretDir { dir: dir.to_path_buf(), generation: 0 };
        s.swap(&std::fs::read(crt).unwrap(), &std::fs::read(key).unwrap());
        std::os::unix::fs::symlink("..data/tls.crt", dir.join("tls.crt")).unwrap();
        std::os::unix::fs::symlink("..data/tls.key", dir.join("tls.key")).unwrap();
        s
    }

    pub fn crt(&self) -> PathBuf {
        self.dir.join("tls.crt")
    }

    pub fn key(&self) -> PathBuf {
        self.dir.join("tls.key")
    }

    /// What the kubelet does on a Secret update: a new timestamped directory, then `..data` renamed over.
    pub fn swap(&mut self, crt: &[u8], key: &[u8]) {
        self.generation += 1;
        let g = format!("..gen_{}", self.generation);
        std::fs::create_dir_all(self.dir.join(&g)).unwrap();
        std::fs::write(self.dir.join(&g).join("tls.crt"), crt).unwrap();
        std::fs::write(self.dir.join(&g).join("tls.key"), key).unwrap();
        let tmp = self.dir.join("..data_tmp");
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&g, &tmp).unwrap();
        std::fs::rename(&tmp, self.dir.join("..data")).unwrap();
    }
}

/// The first certificate of a PEM file, as DER.
pub fn leaf_der(crt: &Path) -> Vec<u8> {
    CertificateDer::pem_file_iter(crt).unwrap().next().unwrap().unwrap().as_ref().to_vec()
}

/// A rustls client trusting `ca`, offering ALPN http/1.1, keeping sessions for resumption (share the Arc).
pub fn client_config(ca: &Path, versions: &[&'static rustls::SupportedProtocolVersion]) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut c = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    c.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(c)
}

/// `client_config` without resumption: every handshake is full, so the peer certificate is the one served now
/// (a resumed session carries no certificate; rustls reports the original session's).
pub fn full_handshakes(ca: &Path) -> Arc<ClientConfig> {
    let mut c = (*client_config(ca, &[&rustls::version::TLS13])).clone();
    c.resumption = rustls::client::Resumption::disabled();
    Arc::new(c)
}

pub type Tls = StreamOwned<ClientConnection, TcpStream>;

/// Connects and completes the handshake.
pub fn connect(cfg: &Arc<ClientConfig>, port: u16) -> Tls {
    connect_to(cfg, "127.0.0.1", port)
}

/// `connect` to another loopback address (`::1`); the certificate is still checked for `localhost`.
pub fn connect_to(cfg: &Arc<ClientConfig>, ip: &str, port: u16) -> Tls {
    let tcp = TcpStream::connect((ip, port)).unwrap_or_else(|e| panic!("connect to {ip} port {port}: {e}"));
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    tcp.set_nodelay(true).unwrap();
    let conn = ClientConnection::new(cfg.clone(), ServerName::try_from("localhost").unwrap()).unwrap();
    let mut s = StreamOwned::new(conn, tcp);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock).unwrap();
    }
    s
}

/// Sends `req` and reads until `n` responses are complete (HEAD responses: `head_only`).
pub fn exchange(s: &mut Tls, req: &[u8], n: usize) -> Vec<Response> {
    s.write_all(req).unwrap();
    s.flush().unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    loop {
        let (rs, _) = parse_responses(&got, false);
        if rs.len() >= n {
            return rs;
        }
        let k = s.read(&mut buf).unwrap_or_else(|e| panic!("read after {} bytes: {e}", got.len()));
        assert!(k > 0, "connection closed after {} bytes", got.len());
        got.extend_from_slice(&buf[..k]);
    }
}

/// One keep-alive GET.
pub fn get(s: &mut Tls, path: &str) -> Response {
    exchange(s, format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes(), 1).remove(0)
}

/// The flags that turn HTTPS on with `crt` and `key`, on a port the kernel picks.
pub fn tls_args<'a>(crt: &'a str, key: &'a str) -> [&'a str; 6] {
    ["--tls-cert", crt, "--tls-key", key, "--tls-listen", "127.0.0.1:0"]
}
