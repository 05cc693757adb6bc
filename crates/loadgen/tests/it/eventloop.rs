//! The plain HTTP/1.1 event loop: responses collected at the next wake-up are timed at their
//! arrival (the kernel's receive stamps), and responses of every shape are read right.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::thread;
use std::time::Duration;

use analysis::summary::SummaryText as _;
use common::{body_recorder, exclusive, plan, run};

/// A keep-alive server: answers every request head on a connection with `respond(i)` for the
/// connection's i-th request, after `delay`; closes after the answer if `close` says so.
fn keepalive_server(
    respond: fn(usize) -> Vec<u8>,
    delay: Duration,
    close: fn(usize) -> bool,
) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            thread::spawn(move || {
                let _ = stream.set_nodelay(true);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let mut buf = vec![0u8; 16 * 1024];
                let mut got = Vec::new();
                for i in 0.. {
                    let end = loop {
                        if let Some(p) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                            break p + 4;
                        }
                        match stream.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    };
                    got.drain(..end);
                    if !delay.is_zero() {
                        thread::sleep(delay);
                    }
                    if stream.write_all(&respond(i)).is_err() || close(i) {
                        return;
                    }
                }
            });
        }
    });
    addr
}

fn ok_13(_: usize) -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nhello, world\n".to_vec()
}

fn never(_: usize) -> bool {
    false
}

#[test]
fn responses_read_at_the_next_wake_up_are_timed_at_their_arrival() {
    let _cpu = exclusive();
    // 2,000 req/s: the next request is 500 µs away, so responses are left for that wake-up
    // rather than waking the thread. Timed when read, they would take about 500 µs; timed by
    // the kernel on arrival, a server that answers at once takes far less.
    let addr = keepalive_server(ok_13, Duration::ZERO, never);
    let url = format!("http://{addr}/");
    let p = plan(&["--rate", "2000", "--duration", "2s", "--threads", "1", &url]);
    let (summary, _) = run(&p);
    assert_eq!(summary.requests.ok, 4000, "{}", summary.to_text());
    let service = &summary.latency.service;
    assert!(
        service.p50_ns < 250_000,
        "service p50 {} ns: responses are timed when read, not when they arrived\n{}",
        service.p50_ns,
        summary.to_text()
    );
    assert_eq!(summary.bytes.in_total, 4000 * 13);

    // And a server that takes 3 ms is measured at 3 ms, not at the next wake-up after it.
    let slow = keepalive_server(ok_13, Duration::from_millis(3), never);
    let url = format!("http://{slow}/");
    let p = plan(&["--rate", "2000", "--duration", "1s", "--threads", "1", &url]);
    let (summary, _) = run(&p);
    assert_eq!(summary.requests.ok, 2000, "{}", summary.to_text());
    let p50 = summary.latency.service.p50_ns;
    assert!(
        (3_000_000..3_400_000).contains(&p50),
        "service p50 {p50} ns for a server that answers after 3 ms\n{}",
        summary.to_text()
    );
}

fn chunked(i: usize) -> Vec<u8> {
    // A body in three chunks, split across writes as a streaming server would.
    let mut out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    out.extend_from_slice(format!("4;n={i}\r\nabcd\r\n10\r\n0123456789abcdef\r\n").as_bytes());
    out.extend_from_slice(b"0\r\nX-Done: yes\r\n\r\n");
    out
}

fn big(_: usize) -> Vec<u8> {
    // Larger than the read buffer and than a loopback segment.
    let body = vec![b'x'; 1 << 20];
    let mut out = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(&body);
    out
}

fn http10(_: usize) -> Vec<u8> {
    b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec()
}

fn every_third(i: usize) -> bool {
    i % 3 == 2
}

fn always(_: usize) -> bool {
    true
}

/// A server's behaviour: its answer, when it closes, the body size, and the load to send.
type Case = (
    &'static str,
    fn(usize) -> Vec<u8>,
    fn(usize) -> bool,
    u64,
    &'static [&'static str],
);

#[test]
fn chunked_large_and_closing_responses_are_read_whole_and_counted() {
    let _cpu = exclusive();
    let cases: [Case; 4] = [
        (
            "chunked",
            chunked,
            never,
            20,
            &["--rate", "1000", "--requests", "300"],
        ),
        (
            "1 MiB bodies",
            big,
            never,
            1 << 20,
            &["--rate", "100", "--requests", "50"],
        ),
        (
            "server closes every third",
            ok_13,
            every_third,
            13,
            &["--rate", "1000", "--requests", "300"],
        ),
        (
            "HTTP/1.0",
            http10,
            always,
            2,
            &["--connections", "4", "--requests", "200"],
        ),
    ];
    for (name, respond, close, body, load) in cases {
        let addr = keepalive_server(respond, Duration::ZERO, close);
        let url = format!("http://{addr}/");
        let mut args = load.to_vec();
        args.extend(["--threads", "1", "--duration", "20s", &url]);
        let (summary, _) = run(&plan(&args));
        let n = summary.requests.total;
        let asked: u64 = args[args.iter().position(|a| *a == "--requests").unwrap() + 1]
            .parse()
            .unwrap();
        assert_eq!(n, asked, "{name}: {}", summary.to_text());
        assert_eq!(summary.requests.ok, n, "{name}: {}", summary.to_text());
        assert_eq!(summary.bytes.in_total, n * body, "{name}");
        if name == "server closes every third" {
            // Each connection serves at most three requests, so 300 need at least 100. More
            // are opened only when requests overlap: a connection left with fewer than three
            // is one still open at the end, and the pool (opened on demand) never held more
            // than were in flight at once.
            let g = &summary.generator;
            assert!(
                (100..=100 + g.peak_in_flight).contains(&g.connections_opened),
                "{name}: {}",
                summary.to_text()
            );
        }
    }
}

#[test]
fn request_bodies_larger_than_a_socket_buffer_are_sent_whole() {
    let _cpu = exclusive();
    // 8 MiB per request, twice loopback's largest send buffer (4 MiB): the first write takes
    // part of it, the rest goes as the socket drains.
    let server = body_recorder();
    let url = format!("http://{}/upload", server.addr);
    let body = "{{hex:4096}}".repeat(2048);
    let p = plan(&[
        "--rate",
        "20",
        "--requests",
        "4",
        "--threads",
        "1",
        "-m",
        "POST",
        "--body",
        &body,
        &url,
    ]);
    let (summary, _) = run(&p);
    assert_eq!(summary.requests.ok, 4, "{}", summary.to_text());
    assert_eq!(summary.bytes.out_total, 4 << 23);
    let bodies = server.bodies.lock().unwrap();
    assert_eq!(bodies.len(), 4);
    assert!(bodies
        .iter()
        .all(|b| b.len() == 1 << 23 && b.iter().all(u8::is_ascii_hexdigit)));
}

/// Answers a connection's first three requests and hangs up on the fourth unanswered, as a
/// server closing an idle keep-alive connection just as the next request goes out.
fn three_then_hang_up(i: usize) -> Vec<u8> {
    if i == 3 {
        Vec::new()
    } else {
        ok_13(i)
    }
}

fn on_the_fourth(i: usize) -> bool {
    i == 3
}

#[test]
fn a_request_the_server_hangs_up_on_after_reuse_is_resent_once_if_idempotent() {
    let _cpu = exclusive();
    let addr = keepalive_server(three_then_hang_up, Duration::ZERO, on_the_fourth);
    let url = format!("http://{addr}/");
    let get = plan(&[
        "--rate",
        "1000",
        "--requests",
        "300",
        "--threads",
        "1",
        "--duration",
        "20s",
        &url,
    ]);
    let (summary, _) = run(&get);
    let text = summary.to_text();
    // Every connection's fourth request goes again on a new connection, where it is answered:
    // none is lost, each is counted once.
    assert_eq!(summary.requests.sent, 300, "{text}");
    assert_eq!(summary.requests.ok, 300, "{text}");
    let g = &summary.generator;
    assert!(
        (90..=g.connections_opened).contains(&g.resent),
        "GET: {} resent of {} connections\n{text}",
        g.resent,
        g.connections_opened
    );
    assert!(
        text.contains(&format!("{} requests (", g.resent))
            && text.contains("sent again on a new connection"),
        "{text}"
    );

    // A POST is not resent: the server may have acted on it. Its hang-ups are errors.
    let post = plan(&[
        "--rate",
        "1000",
        "--requests",
        "40",
        "--threads",
        "1",
        "--duration",
        "20s",
        "-m",
        "POST",
        "--body",
        "x",
        &url,
    ]);
    let (summary, _) = run(&post);
    let text = summary.to_text();
    assert_eq!(summary.generator.resent, 0, "{text}");
    let reset = summary.errors.get("reset").copied().unwrap_or(0);
    assert!(reset >= 5, "POST: {reset} resets\n{text}");
    assert_eq!(summary.requests.ok + reset, 40, "{text}");
}
