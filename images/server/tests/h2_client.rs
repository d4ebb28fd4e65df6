//! The `h2` crate (hyper's HTTP/2 client, strict about the protocol) against the real binary over h2c: twenty
//! concurrent downloads of a file larger than every default window (both flow-control levels and the client's
//! WINDOW_UPDATEs, the disk path), RFC 9218 priorities, a HEAD, a POST with a body (405, body discarded), and a
//! second round on the same connection. The client's tokio IO is bridged to a real TCP socket by two threads
//! (the dev-dependency has tokio's runtime, not its network driver).

mod common;

use std::future::poll_fn;

use common::h2::bridged;
use common::{tempdir, Server};

async fn read(resp: h2::client::ResponseFuture) -> (u16, Vec<u8>) {
    let resp = resp.await.unwrap();
    let status = resp.status().as_u16();
    let mut body = resp.into_body();
    let mut got = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        body.flow_control().release_capacity(chunk.len()).unwrap();
        got.extend_from_slice(&chunk);
    }
    (status, got)
}

fn request(method: &str, path: &str, prio: &str) -> http::Request<()> {
    http::Request::builder().method(method).uri(format!("http://t{path}")).header("priority", prio).body(()).unwrap()
}

#[test]
fn h2_crate_client_against_the_server() {
    let site = tempdir("h2-client");
    std::fs::write(site.join("index.html"), "home").unwrap();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(site.join("big.bin"), &big).unwrap();
    let s = Server::start(&site, &["--h2c", "--max-memory-file-size", "100000"]);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let io = bridged(s.port, &rt);
    rt.block_on(async {
        let (mut client, connection) = h2::client::Builder::new().handshake::<_, &'static [u8]>(io).await.unwrap();
        let conn_task = tokio::task::spawn(connection);
        let mut pending = Vec::new();
        for i in 0..20 {
            poll_fn(|cx| client.poll_ready(cx)).await.unwrap();
            let prio = if i % 2 == 0 { "u=1, i" } else { "u=4" };
            let (resp, _) = client.send_request(request("GET", "/big.bin", prio), true).unwrap();
            // Each body read in its own task, as a browser does (reading them in turn would leave the others'
            // data unreleased and the connection window closed: the client's stall, not ours).
            pending.push(tokio::task::spawn(read(resp)));
        }
        for task in pending {
            let (status, body) = task.await.unwrap();
            assert_eq!(status, 200);
            assert!(body == big, "a 300 KB body arrived whole ({} bytes)", body.len());
        }
        poll_fn(|cx| client.poll_ready(cx)).await.unwrap();
        let (resp, _) = client.send_request(request("HEAD", "/", "u=0"), true).unwrap();
        assert_eq!(read(resp).await, (200, Vec::new()));
        poll_fn(|cx| client.poll_ready(cx)).await.unwrap();
        let (resp, mut send) = client.send_request(request("POST", "/", "u=3"), false).unwrap();
        send.send_data(&b"field=value"[..], true).unwrap();
        assert_eq!(read(resp).await, (405, b"405 Method Not Allowed\n".to_vec()));
        drop(send);
        poll_fn(|cx| client.poll_ready(cx)).await.unwrap();
        let (resp, _) = client.send_request(request("GET", "/", "u=2"), true).unwrap();
        assert_eq!(read(resp).await, (200, b"home".to_vec()));
        // The client goes away: its GOAWAY ends the connection cleanly on both sides.
        drop(client);
        conn_task.await.unwrap().unwrap();
    });
    assert_eq!(s.metric("hyperstatic_http2_streams_total{transport=\"cleartext\"}"), 23.0);
}
