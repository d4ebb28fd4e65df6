//! Our request-head parser (src/http1/parser.rs) against httparse doing the same job, on the heads the server sees:
//! a browser GET, wrk's minimal GET, and wrk's GET pipelined 16 deep. "The same job" means httparse tokenises
//! and ours does everything else for both (`Request::new`, `apply_field`, `finish`), plus the checks httparse
//! leaves out: request-line and header-section limits, the method-length limit, non-ASCII targets, and telling
//! HTTP/2.0 (505) from garbage (400).
//!
//! Run: `cargo bench --bench parser` (release profile). It prints the best and median ns per request of
//! several interleaved rounds; the best is the figure to compare on a busy machine.

use std::hint::black_box;
use std::mem::MaybeUninit;
use std::time::Instant;

use hyperstatic_server::dates;
use hyperstatic_server::http1::parser::{self, ParseError, Parsed, Request, Version};

const BROWSER: &[u8] = b"GET /assets/app.3f2a1c9e.js HTTP/1.1\r\n\
Host: docs.example.com\r\n\
User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n\
Accept: */*\r\n\
Accept-Language: en-US,en;q=0.5\r\n\
Accept-Encoding: gzip, deflate, br, zstd\r\n\
Referer: https://docs.example.com/guide/install/\r\n\
Connection: keep-alive\r\n\
Sec-Fetch-Dest: script\r\n\
If-None-Match: \"6b1f0e2a9c4d7e3f5a1b-br\"\r\n\r\n";

const WRK: &[u8] = b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";

fn via_httparse(buf: &[u8]) -> Result<Parsed<'_>, ParseError> {
    // Uninitialised, so httparse does not pay for zeroing 64 headers per request.
    let mut headers = [const { MaybeUninit::<httparse::Header>::uninit() }; 64];
    let mut r = httparse::Request::new(&mut []);
    let used = match r.parse_with_uninit_headers(buf, &mut headers) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return partial_limits(buf),
        Err(httparse::Error::Version) => return Err(version_error(buf)),
        Err(httparse::Error::TooManyHeaders) => return Err(ParseError::HeadersTooLarge),
        Err(_) => return Err(ParseError::BadRequest),
    };
    let method = r.method.unwrap_or("").as_bytes();
    if method.len() > parser::MAX_METHOD {
        return Err(ParseError::NotImplemented);
    }
    let target = r.path.unwrap_or("").as_bytes();
    // httparse admits obs-text in the target; we do not.
    if target.iter().any(|&b| b >= 0x7f) {
        return Err(ParseError::BadRequest);
    }
    let line_end = buf.iter().position(|&b| b == b'\n').unwrap_or(0);
    if line_end >= parser::MAX_REQUEST_LINE {
        return Err(ParseError::UriTooLong);
    }
    if used - line_end > parser::MAX_HEADER_SECTION {
        return Err(ParseError::HeadersTooLarge);
    }
    let version = if r.version == Some(0) { Version::Http10 } else { Version::Http11 };
    let mut req = Request::new(method, target, version)?;
    for h in r.headers.iter() {
        req.apply_field(h.name.as_bytes(), h.value.trim_ascii())?;
    }
    req.finish()?;
    Ok(Parsed::Complete(req, used))
}

fn partial_limits(buf: &[u8]) -> Result<Parsed<'_>, ParseError> {
    match buf.iter().position(|&b| b == b'\n') {
        None if buf.len() >= parser::MAX_REQUEST_LINE => Err(ParseError::UriTooLong),
        Some(nl) if buf.len() - nl > parser::MAX_HEADER_SECTION => Err(ParseError::HeadersTooLarge),
        _ => Ok(Parsed::Partial),
    }
}

fn version_error(buf: &[u8]) -> ParseError {
    let line = buf.split(|&b| b == b'\n').next().unwrap_or(b"").trim_ascii_end();
    match line.rsplit(|&b| b == b' ').next() {
        Some([b'H', b'T', b'T', b'P', b'/', maj, b'.', min]) if maj.is_ascii_digit() && min.is_ascii_digit() => {
            ParseError::VersionNotSupported
        }
        _ => ParseError::BadRequest,
    }
}

/// Parses every head in `buf` (a pipelined batch); returns how many.
fn parse_all(buf: &[u8], parse: fn(&[u8]) -> Result<Parsed<'_>, ParseError>) -> usize {
    let (mut pos, mut n) = (0, 0);
    while pos < buf.len() {
        match parse(&buf[pos..]) {
            Ok(Parsed::Complete(req, used)) => {
                black_box(&req);
                pos += used;
                n += 1;
            }
            other => panic!("benchmark input must parse: {:?}", other.map(|_| ())),
        }
    }
    n
}

/// ns per request of one round of `iters` batches.
fn round(buf: &[u8], iters: u32, parse: fn(&[u8]) -> Result<Parsed<'_>, ParseError>) -> f64 {
    let start = Instant::now();
    let mut requests = 0;
    for _ in 0..iters {
        requests += parse_all(black_box(buf), parse);
    }
    start.elapsed().as_nanos() as f64 / requests as f64
}

fn same_result(buf: &[u8]) {
    let fmt = |p: Result<Parsed<'_>, ParseError>| format!("{p:?}");
    assert_eq!(fmt(parser::parse(buf)), fmt(via_httparse(buf)), "both parsers must agree on the inputs");
}

fn summary(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[0], v[v.len() / 2])
}

fn main() {
    let pipelined: Vec<u8> = WRK.repeat(16);
    let workloads: [(&str, &[u8], u32); 3] = [
        ("browser GET, 9 headers", BROWSER, 200_000),
        ("wrk GET", WRK, 400_000),
        ("wrk GET pipelined x16", &pipelined, 25_000),
    ];
    // The comparison is only fair if both sides accept and reject the same things.
    for input in [
        BROWSER,
        WRK,
        b"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
        b"GET / HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    ] {
        same_result(input);
    }
    println!("{:<26} {:>22} {:>22}", "ns/request (best, median)", "ours (http1/parser.rs)", "httparse + our checks");
    for (name, buf, iters) in workloads {
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..15 {
            ours.push(round(buf, iters, parser::parse));
            theirs.push(round(buf, iters, via_httparse));
        }
        let (ob, om) = summary(ours);
        let (tb, tm) = summary(theirs);
        println!("{name:<26} {ob:>12.1} {om:>9.1} {tb:>12.1} {tm:>9.1}");
    }

    // HTTP dates with the httpdate crate: If-Modified-Since parsing runs per conditional request that has no
    // If-None-Match; formatting runs once per second (Date) and once per file at load time (Last-Modified).
    let ims = b"Sun, 06 Nov 1994 08:49:37 GMT";
    let mut parse_ns = Vec::new();
    let mut format_ns = Vec::new();
    for _ in 0..15 {
        let start = Instant::now();
        for _ in 0..200_000 {
            black_box(dates::parse(black_box(ims)));
        }
        parse_ns.push(start.elapsed().as_nanos() as f64 / 200_000.0);
        let mut out = [0u8; dates::LEN];
        let start = Instant::now();
        for i in 0..200_000 {
            dates::format(black_box(1_700_000_000 + i), &mut out);
            black_box(&out);
        }
        format_ns.push(start.elapsed().as_nanos() as f64 / 200_000.0);
    }
    let (pb, pm) = summary(parse_ns);
    let (fb, fm) = summary(format_ns);
    println!("dates::parse (IMF-fixdate) {pb:>12.1} {pm:>9.1}");
    println!("dates::format              {fb:>12.1} {fm:>9.1}");
}
