//! h3load-quinn: h3load's twin (h3interop/quicgo/h3load: the same flags, the same one-line JSON summary) on quinn,
//! for the one thing quic-go cannot show: a client that honours the server's ACK_FREQUENCY frame
//! (draft-ietf-quic-ack-frequency; quic-go 0.65, aioquic 1.7 and ngtcp2 1.11 do not, quinn-proto does), so the
//! server's `--h3-ack-eliciting-threshold` can be measured (docs/bench/h3-ack-2026-12-03.md). Besides h3load's
//! fields it prints what its QUIC stack counted: ACK frames and datagrams it sent and received, and the
//! ACK_FREQUENCY and IMMEDIATE_ACK frames it was sent, so a run shows whether the request was honoured.
//!
//! The client is quinn's (another QUIC stack's client than quic-go's, yet the same crate family as the server: it
//! is a second client for the bench, never an interop witness). HTTP/3 is the least a client may do: a control
//! stream with empty SETTINGS, each request one HEADERS frame (QPACK static table and literals, no dynamic table,
//! as RFC 9204 allows), the response read whole, its status read from the first field line and its DATA frames'
//! bytes counted. One thread (a current-thread runtime), like h3load with GOMAXPROCS=1; run it pinned.
//!
//!     h3load-quinn -ca-pem FILE [-server-name NAME] -c 4 -m 16 (-D 10s | -n N) [-new-conn-every N] (-i FILE | URL)

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod h3;
mod pinned;

/// What the run was asked (h3load's flags).
struct Args {
    ca_pem: String,
    server_name: Option<String>,
    conns: usize,
    streams: usize,
    duration: Option<Duration>,
    total: u64,
    new_conn_every: u64,
    uri_file: Option<String>,
    url: String,
}

/// What every connection adds to, read once at the end.
#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    errors: AtomicU64,
    by_class: [AtomicU64; 6],
    body_bytes: AtomicU64,
    conns: AtomicU64,
    /// From quinn's connection statistics, summed as each connection ends.
    ack_frames_sent: AtomicU64,
    ack_frames_received: AtomicU64,
    datagrams_sent: AtomicU64,
    datagrams_received: AtomicU64,
    ack_frequency_received: AtomicU64,
    immediate_ack_received: AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl Counters {
    fn fail(&self, e: impl std::fmt::Display) {
        self.errors.fetch_add(1, Relaxed);
        let mut f = self.first_error.lock().unwrap();
        if f.is_none() {
            *f = Some(e.to_string());
        }
    }
}

/// The run: where to, what to ask, when to stop.
struct Run {
    addr: SocketAddr,
    name: String,
    /// One encoded HEADERS frame per path, made before the clock starts.
    requests: Vec<Vec<u8>>,
    deadline: Option<Instant>,
    total: u64,
    issued: AtomicU64,
    args: Args,
    n: Counters,
}

impl Run {
    /// Whether another request may start (the clock or -n).
    fn ticket(&self) -> bool {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        self.total == 0 || self.issued.fetch_add(1, Relaxed) < self.total
    }

    fn done(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
            || (self.total > 0 && self.issued.load(Relaxed) >= self.total)
    }
}

fn main() {
    let args = match parse_args(std::env::args().skip(1).collect()) {
        Ok(a) => a,
        Err(e) => fatal(&e),
    };
    let rt =
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| fatal(&e.to_string()));
    rt.block_on(run(args));
}

async fn run(args: Args) {
    let (authority, base_path) = split_url(&args.url).unwrap_or_else(|e| fatal(&e));
    let addr = authority
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .unwrap_or_else(|| fatal(&format!("cannot resolve {authority}")));
    let host = authority.rsplit_once(':').map_or(authority.as_str(), |(h, _)| h).trim_matches(['[', ']']);
    let name = args.server_name.clone().unwrap_or_else(|| host.to_string());
    let paths = match &args.uri_file {
        Some(f) => read_paths(f, &base_path).unwrap_or_else(|e| fatal(&e)),
        None => vec![base_path.clone()],
    };
    let requests = paths.iter().map(|p| h3::request(&authority, p)).collect();
    let endpoint = client_endpoint(&args, addr).unwrap_or_else(|e| fatal(&e));
    let start = Instant::now();
    let run = Arc::new(Run {
        addr,
        name,
        requests,
        deadline: args.duration.map(|d| start + d),
        total: args.total,
        issued: AtomicU64::new(0),
        args,
        n: Counters::default(),
    });
    let mut set = tokio::task::JoinSet::new();
    for i in 0..run.args.conns {
        set.spawn(connection_loop(run.clone(), endpoint.clone(), i));
    }
    while set.join_next().await.is_some() {}
    let seconds = start.elapsed().as_secs_f64();
    endpoint.wait_idle().await;
    print_summary(&run.n, seconds);
}

/// One of the -c connections: opened, its -m streams run until the run ends or -new-conn-every requests were
/// started on it, closed, and opened anew while the run goes on.
async fn connection_loop(run: Arc<Run>, endpoint: quinn::Endpoint, i: usize) {
    let cursor = Arc::new(AtomicUsize::new(i * run.requests.len() / run.args.conns.max(1)));
    while !run.done() {
        let conn = match endpoint.connect(run.addr, &run.name) {
            Ok(c) => match c.await {
                Ok(c) => c,
                Err(e) => {
                    // Counted as a request that got no answer, so that -n ends when the server never answers.
                    if !run.ticket() {
                        break;
                    }
                    run.n.fail(format!("connect: {e}"));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            Err(e) => fatal(&format!("connect: {e}")),
        };
        run.n.conns.fetch_add(1, Relaxed);
        // The control stream lives as long as the connection (closing it is a connection error).
        let control = match open_control(&conn).await {
            Ok(s) => s,
            Err(e) => {
                run.n.fail(format!("control stream: {e}"));
                continue;
            }
        };
        let started = Arc::new(AtomicU64::new(0));
        let mut streams = tokio::task::JoinSet::new();
        for _ in 0..run.args.streams {
            streams.spawn(stream_loop(run.clone(), conn.clone(), started.clone(), cursor.clone()));
        }
        while streams.join_next().await.is_some() {}
        let s = conn.stats();
        let n = &run.n;
        n.ack_frames_sent.fetch_add(s.frame_tx.acks, Relaxed);
        n.ack_frames_received.fetch_add(s.frame_rx.acks, Relaxed);
        n.datagrams_sent.fetch_add(s.udp_tx.datagrams, Relaxed);
        n.datagrams_received.fetch_add(s.udp_rx.datagrams, Relaxed);
        n.ack_frequency_received.fetch_add(s.frame_rx.ack_frequency, Relaxed);
        n.immediate_ack_received.fetch_add(s.frame_rx.immediate_ack, Relaxed);
        conn.close(0u32.into(), b"done");
        drop(control);
        if run.args.new_conn_every == 0 {
            break;
        }
    }
}

async fn open_control(conn: &quinn::Connection) -> Result<quinn::SendStream, String> {
    let mut s = conn.open_uni().await.map_err(|e| e.to_string())?;
    s.write_all(&h3::CONTROL_STREAM).await.map_err(|e| e.to_string())?;
    Ok(s)
}

/// One stream slot of a connection: a request at a time, the next as soon as the last is read whole.
async fn stream_loop(run: Arc<Run>, conn: quinn::Connection, started: Arc<AtomicU64>, cursor: Arc<AtomicUsize>) {
    let every = run.args.new_conn_every;
    loop {
        if every > 0 && started.fetch_add(1, Relaxed) >= every {
            return;
        }
        if !run.ticket() {
            return;
        }
        let req = &run.requests[cursor.fetch_add(1, Relaxed) % run.requests.len()];
        match exchange(&conn, req).await {
            Ok((status, body)) => {
                run.n.requests.fetch_add(1, Relaxed);
                run.n.by_class[(status / 100).min(5) as usize].fetch_add(1, Relaxed);
                run.n.body_bytes.fetch_add(body, Relaxed);
            }
            Err(e) => {
                run.n.fail(e);
                if conn.close_reason().is_some() {
                    return;
                }
            }
        }
    }
}

/// One request: its HEADERS frame on a new stream, the stream finished, the response read to its end.
async fn exchange(conn: &quinn::Connection, req: &[u8]) -> Result<(u16, u64), String> {
    let (mut send, mut recv) = conn.open_bi().await.map_err(|e| format!("open stream: {e}"))?;
    send.write_all(req).await.map_err(|e| format!("send: {e}"))?;
    send.finish().map_err(|e| format!("finish: {e}"))?;
    let got = recv.read_to_end(64 << 20).await.map_err(|e| format!("read: {e}"))?;
    h3::response(&got)
}

fn client_endpoint(args: &Args, addr: SocketAddr) -> Result<quinn::Endpoint, String> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let mut certs = Vec::new();
    for c in CertificateDer::pem_file_iter(&args.ca_pem).map_err(|e| format!("-ca-pem {}: {e}", args.ca_pem))? {
        certs.push(c.map_err(|e| format!("-ca-pem {}: {e}", args.ca_pem))?);
    }
    if certs.is_empty() {
        return Err(format!("-ca-pem {} holds no certificate", args.ca_pem));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(pinned::Pinned { certs, provider }))
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    // As h3load: every connection a full handshake (a new connection per N requests measures handshakes).
    tls.resumption = rustls::client::Resumption::disabled();
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls).map_err(|e| e.to_string())?;
    let bind: SocketAddr = if addr.is_ipv6() { "[::]:0".parse().unwrap() } else { "0.0.0.0:0".parse().unwrap() };
    let mut ep = quinn::Endpoint::client(bind).map_err(|e| format!("bind: {e}"))?;
    ep.set_default_client_config(quinn::ClientConfig::new(Arc::new(quic)));
    Ok(ep)
}

/// `https://host:port/path` → (`host:port`, `/path`).
fn split_url(url: &str) -> Result<(String, String), String> {
    let rest = url.strip_prefix("https://").ok_or_else(|| format!("{url}: not an https:// URL"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let authority = if authority.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) {
        authority.to_string()
    } else {
        format!("{authority}:443")
    };
    Ok((authority, path.to_string()))
}

/// The -i file: URLs (their paths are taken) or paths (joined to the URL's), one per line.
fn read_paths(file: &str, base: &str) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("-i {file}: {e}"))?;
    let mut out = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        out.push(if line.starts_with("https://") {
            split_url(line)?.1
        } else if line.starts_with('/') {
            line.to_string()
        } else {
            format!("{}/{line}", base.trim_end_matches('/'))
        });
    }
    if out.is_empty() {
        return Err(format!("-i {file}: no URL in it"));
    }
    Ok(out)
}

fn parse_args(argv: Vec<String>) -> Result<Args, String> {
    let mut a = Args {
        ca_pem: String::new(),
        server_name: None,
        conns: 1,
        streams: 1,
        duration: None,
        total: 0,
        new_conn_every: 0,
        uri_file: None,
        url: String::new(),
    };
    let mut it = argv.into_iter();
    let mut positional = Vec::new();
    while let Some(arg) = it.next() {
        let Some(flag) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
            positional.push(arg);
            continue;
        };
        let (flag, inline) = match flag.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (flag.to_string(), None),
        };
        let v = match inline.or_else(|| it.next()) {
            Some(v) => v,
            None => return Err(format!("-{flag} needs a value")),
        };
        let num = |v: &str| v.parse::<u64>().map_err(|_| format!("-{flag} {v}: not a number"));
        match flag.as_str() {
            "ca-pem" => a.ca_pem = v,
            "server-name" => a.server_name = Some(v),
            "c" => a.conns = num(&v)?.max(1) as usize,
            "m" => a.streams = num(&v)?.max(1) as usize,
            "D" => a.duration = Some(parse_duration(&v)?),
            "n" => a.total = num(&v)?,
            "new-conn-every" => a.new_conn_every = num(&v)?,
            "i" => a.uri_file = Some(v),
            _ => return Err(format!("unknown flag -{flag}")),
        }
    }
    if a.duration.is_some() == (a.total > 0) {
        return Err("give exactly one of -D and -n".into());
    }
    if a.ca_pem.is_empty() {
        return Err("-ca-pem is required".into());
    }
    a.url = match positional.as_slice() {
        [u] => u.clone(),
        _ => return Err("one URL argument".into()),
    };
    Ok(a)
}

/// `7s`, `1500ms`, `2m`.
fn parse_duration(v: &str) -> Result<Duration, String> {
    let bad = || format!("-D {v}: not a duration (7s, 1500ms, 2m)");
    let (n, unit) = v.find(|c: char| !c.is_ascii_digit()).map(|i| v.split_at(i)).ok_or_else(bad)?;
    let n: u64 = n.parse().map_err(|_| bad())?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(60 * n)),
        _ => Err(bad()),
    }
}

fn cpu_seconds() -> (f64, f64) {
    // SAFETY: getrusage fills the struct it is given; a zeroed rusage is a valid one.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF is always valid.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (s(u.ru_utime), s(u.ru_stime))
}

fn print_summary(n: &Counters, seconds: f64) {
    let (user, system) = cpu_seconds();
    let c = |i: usize| n.by_class[i].load(Relaxed);
    let first = n.first_error.lock().unwrap().clone().unwrap_or_default();
    println!(
        "{{\"requests\":{},\"errors\":{},\"status2xx\":{},\"status3xx\":{},\"status4xx\":{},\"status5xx\":{},\
         \"bodyBytes\":{},\"seconds\":{seconds:.6},\"connections\":{},\"userCPUSeconds\":{user:.6},\
         \"systemCPUSeconds\":{system:.6},\"ackFramesSent\":{},\"ackFramesReceived\":{},\"datagramsSent\":{},\
         \"datagramsReceived\":{},\"ackFrequencyReceived\":{},\"immediateAckReceived\":{},\"firstError\":{}}}",
        n.requests.load(Relaxed),
        n.errors.load(Relaxed),
        c(2),
        c(3),
        c(4),
        c(5),
        n.body_bytes.load(Relaxed),
        n.conns.load(Relaxed),
        n.ack_frames_sent.load(Relaxed),
        n.ack_frames_received.load(Relaxed),
        n.datagrams_sent.load(Relaxed),
        n.datagrams_received.load(Relaxed),
        n.ack_frequency_received.load(Relaxed),
        n.immediate_ack_received.load(Relaxed),
        json_string(&first),
    );
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn fatal(msg: &str) -> ! {
    eprintln!("h3load-quinn: {msg}");
    std::process::exit(2);
}
