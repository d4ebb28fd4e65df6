//! The engine against a real client: the `h2` crate (hyper's HTTP/2, strict about the protocol) on one end of
//! an in-memory pipe, our sans-IO connection on the other behind a tiny adapter that does what the worker's
//! transport will do (read, `recv`, `respond`, `write`). Concurrent GETs of a body larger than every default
//! window (so both flow-control levels and the client's WINDOW_UPDATEs are exercised), a HEAD, a POST with a
//! body, RFC 9218 priority headers, and the client's GOAWAY at the end.

use std::future::poll_fn;

use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use super::super::hpack::encode;
use super::super::{Conn, Event, Limits};

const BIG: &[u8] = &[b'z'; 300_000];
const SMALL: &[u8] = b"hello over h2";

fn site(path: &[u8]) -> &'static [u8] {
    if path.starts_with(b"/big") {
        BIG
    } else {
        SMALL
    }
}

/// The server side: the loop a transport runs.
async fn serve(mut io: DuplexStream) -> usize {
    let mut conn: Conn<&'static [u8]> = Conn::new(Limits::default());
    let mut buf = Vec::new();
    let mut rd = vec![0u8; 16_384 + 9];
    let mut answered = 0;
    loop {
        let mut out = Vec::new();
        while conn.wants_write() {
            conn.write(&mut out, 64 * 1024);
        }
        if !out.is_empty() {
            io.write_all(&out).await.unwrap();
        }
        if conn.is_closed() {
            return answered;
        }
        let n = io.read(&mut rd).await.unwrap();
        if n == 0 {
            return answered;
        }
        buf.extend_from_slice(&rd[..n]);
        let mut at = 0;
        loop {
            let (used, ev) = conn.recv(&buf[at..]);
            at += used;
            let req = ev.map(|Event::Request(r)| (r.stream, r.method() == b"HEAD", site(r.path())));
            match req {
                Some((id, head_only, body)) => {
                    let mut head = Vec::new();
                    encode::status(&mut head, 200);
                    encode::field(&mut head, b"content-length", body.len().to_string().as_bytes());
                    let body = if head_only { None } else { Some((body, 0, body.len() as u64)) };
                    conn.respond(id, &[&head], body).unwrap();
                    answered += 1;
                }
                None if used == 0 => break,
                None => {}
            }
        }
        buf.drain(..at);
    }
}

async fn fetch(
    client: &mut h2::client::SendRequest<&'static [u8]>,
    method: &str,
    path: &str,
    prio: &str,
) -> (u16, Vec<u8>) {
    poll_fn(|cx| client.poll_ready(cx)).await.unwrap();
    let req = http::Request::builder()
        .method(method)
        .uri(format!("https://a.example{path}"))
        .header("priority", prio)
        .body(())
        .unwrap();
    let (resp, _) = client.send_request(req, true).unwrap();
    read(resp).await
}

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

#[test]
fn h2_crate_client_against_the_engine() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let server = tokio::task::spawn(serve(server_io));
        let (mut client, connection) =
            h2::client::Builder::new().handshake::<_, &'static [u8]>(client_io).await.unwrap();
        let conn_task = tokio::task::spawn(connection);

        // Twenty concurrent GETs of 300 KB: 6 MB through 64 KiB windows.
        let mut pending = Vec::new();
        for i in 0..20 {
            poll_fn(|cx| client.poll_ready(cx)).await.unwrap();
            let req = http::Request::builder()
                .uri(format!("https://a.example/big/{i}"))
                .header("priority", if i % 2 == 0 { "u=1, i" } else { "u=4" })
                .body(())
                .unwrap();
            // Each body read in its own task, as a browser would: reading them one after another would leave
            // the others' data unreleased and the connection window closed (the client's stall, not ours).
            pending.push(tokio::task::spawn(read(client.send_request(req, true).unwrap().0)));
        }
        for task in pending {
            let (status, body) = task.await.unwrap();
            assert_eq!(status, 200);
            assert_eq!(body.len(), BIG.len());
        }
        assert_eq!(fetch(&mut client, "GET", "/small", "u=0").await, (200, SMALL.to_vec()));
        assert_eq!(fetch(&mut client, "HEAD", "/small", "u=3").await, (200, Vec::new()));

        // A POST with a body: answered, and the body's DATA handled without a protocol error.
        poll_fn(|cx| client.poll_ready(cx)).await.unwrap();
        let req = http::Request::builder().method("POST").uri("https://a.example/form").body(()).unwrap();
        let (resp, mut send) = client.send_request(req, false).unwrap();
        send.send_data(&b"field=value"[..], true).unwrap();
        assert_eq!(read(resp).await, (200, SMALL.to_vec()));
        drop(send);

        // A second round on the same connection after all that.
        assert_eq!(fetch(&mut client, "GET", "/again", "u=2").await, (200, SMALL.to_vec()));
        // The client goes away: its GOAWAY closes our side, and our close ends its connection cleanly.
        drop(client);
        conn_task.await.unwrap().unwrap();
        assert_eq!(server.await.unwrap(), 24);
    });
}
