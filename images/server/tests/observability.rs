//! The request-duration histogram and the access log, checked against the real binary: every response is
//! observed once (pipelined ones each on their own), buckets are cumulative, and each request's log line
//! carries the client port, method, target, status, body bytes, escaped user agent and a duration.

mod common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::{make_site, parse_responses, read_to_close, Server};

/// Waits for `cond` (a condition, not a clock: the deadline only turns a hang into a failure).
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn request_lines(s: &Server) -> Vec<String> {
    s.logs.lock().unwrap().iter().filter(|l| l.contains("\"msg\":\"request\"")).cloned().collect()
}

/// The raw JSON text of a field's value (strings keep their quotes and escapes).
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let k = format!("\"{key}\":");
    let i = line.find(&k).unwrap_or_else(|| panic!("no {key} in {line}")) + k.len();
    let rest = &line[i..];
    if let Some(body) = rest.strip_prefix('"') {
        let mut esc = false;
        for (j, ch) in body.char_indices() {
            match ch {
                '\\' if !esc => esc = true,
                '"' if !esc => return &rest[..j + 2],
                _ => esc = false,
            }
        }
        panic!("unterminated string for {key} in {line}");
    }
    let end = rest.find([',', '}']).unwrap();
    &rest[..end]
}

/// (le, cumulative count) in exposition order, plus _sum and _count.
fn histogram(s: &Server) -> (Vec<(String, u64)>, f64, u64) {
    let body = s.admin_get("/metrics").text();
    let mut buckets = Vec::new();
    let (mut sum, mut count) = (f64::NAN, u64::MAX);
    for l in body.lines() {
        if let Some(rest) = l.strip_prefix("hyperstatic_request_duration_seconds_bucket{le=\"") {
            let (le, v) = rest.split_once("\"} ").unwrap();
            buckets.push((le.to_string(), v.parse().unwrap()));
        } else if let Some(v) = l.strip_prefix("hyperstatic_request_duration_seconds_sum ") {
            sum = v.parse().unwrap();
        } else if let Some(v) = l.strip_prefix("hyperstatic_request_duration_seconds_count ") {
            count = v.parse().unwrap();
        }
    }
    (buckets, sum, count)
}

#[test]
fn every_response_is_observed_and_logged() {
    let site = make_site("observe");
    let s = Server::start(&site, &["--access-log"]);
    let etag = s.get("/index.html", &[]).header("etag").unwrap().to_string();

    // One pipelined batch: 200 from memory, 304, 404 (custom page), the 3 MB file, then close.
    let ua = r#"probe "quoted" back\slash"#;
    let batch = format!(
        "GET /100.html HTTP/1.1\r\nHost: t\r\nUser-Agent: {ua}\r\n\r\n\
         GET /index.html HTTP/1.1\r\nHost: t\r\nIf-None-Match: {etag}\r\nUser-Agent: {ua}\r\n\r\n\
         GET /missing?x=1 HTTP/1.1\r\nHost: t\r\nUser-Agent: {ua}\r\n\r\n\
         GET /big.bin HTTP/1.1\r\nHost: t\r\nUser-Agent: {ua}\r\nConnection: close\r\n\r\n"
    );
    let mut c = s.connect();
    let port = c.local_addr().unwrap().port();
    c.write_all(batch.as_bytes()).unwrap();
    let bytes = read_to_close(&mut c);
    let (rs, _) = parse_responses(&bytes, false);
    let statuses: Vec<u16> = rs.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [200, 304, 404, 200]);
    assert_eq!(rs[3].body.len(), 3_000_000);

    // Observations land after the last byte is written, possibly after the client has read it: wait.
    let responses = 5;
    wait_for("5 observations", || histogram(&s).2 == responses);
    let (buckets, sum, count) = histogram(&s);
    assert_eq!(count, responses);
    let codes: f64 =
        ["200", "304", "404"].iter().map(|c| s.metric(&format!("hyperstatic_requests_total{{code=\"{c}\"}}"))).sum();
    assert_eq!(codes as u64, count, "every counted response is observed once");
    let les: Vec<&str> = buckets.iter().map(|(le, _)| le.as_str()).collect();
    assert_eq!(
        les,
        [
            "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5",
            "1", "2.5", "5", "10", "+Inf"
        ]
    );
    assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "cumulative: {buckets:?}");
    assert_eq!(buckets.last().unwrap().1, count, "+Inf equals _count");
    assert!(sum > 0.0, "{sum}");

    wait_for("5 access-log lines", || request_lines(&s).len() == responses as usize);
    let lines: Vec<String> =
        request_lines(&s).into_iter().filter(|l| field(l, "client") == format!("\"127.0.0.1:{port}\"")).collect();
    assert_eq!(lines.len(), 4, "one line per pipelined request from port {port}: {lines:?}");
    let expect = [
        ("/100.html", 200, 100),
        ("/index.html", 304, 0),
        ("/missing?x=1", 404, rs[2].body.len()),
        ("/big.bin", 200, 3_000_000),
    ];
    for (l, (target, status, body)) in lines.iter().zip(expect) {
        assert_eq!(field(l, "method"), "\"GET\"", "{l}");
        assert_eq!(field(l, "target"), format!("\"{target}\""), "{l}");
        assert_eq!(field(l, "status"), status.to_string(), "{l}");
        assert_eq!(field(l, "bytes"), body.to_string(), "{l}");
        assert_eq!(field(l, "user_agent"), r#""probe \"quoted\" back\\slash""#, "{l}");
        let d: f64 = field(l, "duration").parse().unwrap();
        assert!((0.0..60.0).contains(&d), "{l}");
        assert!(l.ends_with('}'), "{l}");
    }
}

#[test]
fn hostile_bytes_in_the_target_stay_escaped() {
    let site = make_site("observe-hostile");
    let s = Server::start(&site, &["--access-log"]);
    // The parser lets a quote and a backslash through in the target (visible ASCII) and HTAB and obs-text
    // (invalid UTF-8 here) through in a field value; everything else is answered 400 before any logging.
    let mut c = s.connect();
    c.write_all(b"GET /a\"b\\c?q HTTP/1.1\r\nHost: t\r\nUser-Agent: x\ty\xff\xfe\r\nConnection: close\r\n\r\n")
        .unwrap();
    let bytes = read_to_close(&mut c);
    let (rs, _) = parse_responses(&bytes, false);
    assert_eq!(rs.len(), 1);
    wait_for("the access-log line", || request_lines(&s).len() == 1);
    let l = request_lines(&s).remove(0);
    // The test's reader decodes stderr as UTF-8 lines: the line must be plain ASCII JSON.
    assert!(l.is_ascii(), "{l}");
    // The path check answers 400 (a parsed request, so it is logged), whatever the status, it is the one sent.
    assert_eq!(field(&l, "status"), rs[0].status.to_string(), "{l}");
    assert_eq!(field(&l, "target"), r#""/a\"b\\c?q""#, "{l}");
    assert_eq!(field(&l, "user_agent"), r#""x\ty\u00ff\u00fe""#, "{l}");
}

#[test]
fn sampling_logs_one_request_in_n_and_observes_all() {
    let site = make_site("observe-sample");
    let s = Server::start(&site, &["--access-log", "--access-log-sample", "3"]);
    // One connection: one worker, whose counter decides which requests are logged (the 3rd, 6th, 9th).
    let mut c = s.connect();
    for i in 1..=9 {
        c.write_all(format!("GET /100.html?n={i} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while parse_responses(&got, false).0.is_empty() {
            let n = std::io::Read::read(&mut c, &mut buf).unwrap();
            assert!(n > 0, "connection closed early");
            got.extend_from_slice(&buf[..n]);
        }
    }
    // The 9th line is the last one this worker writes; stderr is one ordered pipe.
    wait_for("the 9th request's line", || request_lines(&s).iter().any(|l| l.contains("?n=9")));
    let targets: Vec<String> = request_lines(&s).iter().map(|l| field(l, "target").to_string()).collect();
    assert_eq!(targets, ["\"/100.html?n=3\"", "\"/100.html?n=6\"", "\"/100.html?n=9\""]);
    wait_for("9 observations", || histogram(&s).2 == 9);
}
