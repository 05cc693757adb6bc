//! The probe's stream over TLS: pinned and CA-verified subscribers, plain clients refused,
//! wrong fingerprints named, hostile clients dropped, and nothing readable on the wire.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use probe::client::{ClientError, Subscriber};
use probe::protocol::Start;
use probe::server::ServeConfig;
use probe::tls::{parse_fingerprint, ClientTls, ServerTls, Trust};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOKEN: &str = "correct horse battery staple";

/// A TLS probe on a free loopback port, sampling this test process, with a certificate made
/// for `names` in a temporary directory.
struct Served {
    addr: SocketAddr,
    tls: ServerTls,
    dir: tempfile::TempDir,
    _probe: common::Served,
}

async fn served(names: &[&str], hello_timeout: Duration) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let (tls, made) = ServerTls::generate_or_load(dir.path(), &names).unwrap();
    assert!(made);
    let config = ServeConfig {
        token: Some(TOKEN.into()),
        tls: Some(tls.config.clone()),
        hello_timeout,
        ..Default::default()
    };
    let probe = common::served(config, 20, 10_000).await;
    Served {
        addr: probe.addr,
        tls,
        dir,
        _probe: probe,
    }
}

fn pinned(fingerprint: &str) -> ClientTls {
    ClientTls::new(&Trust::Fingerprint(parse_fingerprint(fingerprint).unwrap())).unwrap()
}

/// The next `n` records' sequence numbers; a gap fails the test.
async fn records(sub: &mut Subscriber, n: usize) -> Vec<u64> {
    let (seqs, gaps) = common::read_records(sub, n).await;
    assert!(gaps.is_empty(), "{gaps:?}");
    seqs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_subscriber_reconnects_over_tls_and_misses_no_sample() {
    let probe = served(&["localhost"], Duration::from_secs(5)).await;
    let tls = pinned(&probe.tls.fingerprint);
    let mut sub =
        Subscriber::connect_with(probe.addr, Some(TOKEN), Some(&tls), Start::Oldest, "test")
            .await
            .unwrap();
    let first = records(&mut sub, 10).await;
    drop(sub); // cut, no bye
    tokio::time::sleep(Duration::from_millis(300)).await;
    let last = *first.last().unwrap();
    let mut sub = Subscriber::connect_with(
        probe.addr,
        Some(TOKEN),
        Some(&tls),
        Start::After {
            seq: last,
            instance: None,
        },
        "test",
    )
    .await
    .unwrap();
    let second = records(&mut sub, 20).await;
    let all: Vec<u64> = first.into_iter().chain(second).collect();
    let expected: Vec<u64> = (all[0]..all[0] + all.len() as u64).collect();
    assert_eq!(
        all, expected,
        "every record once, in order, across the reconnection"
    );

    // The token is still checked, inside the session.
    let wrong =
        Subscriber::connect_with(probe.addr, Some("guess"), Some(&tls), Start::Live, "test").await;
    assert!(
        matches!(&wrong, Err(ClientError::Refused(r)) if r == "wrong token"),
        "{wrong:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_client_is_refused_cleanly_naming_tls() {
    let probe = served(&["localhost"], Duration::from_secs(5)).await;
    let plain = Subscriber::connect(probe.addr, Some(TOKEN), Start::Live, "test").await;
    match plain {
        Err(ClientError::Refused(reason)) => {
            assert!(reason.contains("requires TLS"), "{reason}");
            assert!(reason.contains("--probe-fingerprint"), "{reason}");
        }
        other => panic!("a plain client was not refused cleanly: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_fingerprint_is_refused_naming_the_flag() {
    let probe = served(&["localhost"], Duration::from_secs(5)).await;
    let other = probe::tls::fingerprint(b"some other certificate");
    let refused = Subscriber::connect_with(
        probe.addr,
        Some(TOKEN),
        Some(&pinned(&other)),
        Start::Live,
        "test",
    )
    .await;
    match refused {
        Err(ClientError::Tls { reason, .. }) => {
            assert!(reason.contains("--probe-fingerprint"), "{reason}");
            assert!(
                reason.contains(&probe.tls.fingerprint),
                "names what the probe has: {reason}"
            );
        }
        other => panic!("a wrong fingerprint was accepted or misreported: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_file_is_trusted_for_the_names_in_the_certificate_only() {
    let probe = served(&["localhost", "127.0.0.1"], Duration::from_secs(5)).await;
    let ca = ClientTls::new(&Trust::Ca(probe.dir.path().join("probe.crt"))).unwrap();
    let mut sub = Subscriber::connect_with(probe.addr, Some(TOKEN), Some(&ca), Start::Live, "test")
        .await
        .unwrap();
    records(&mut sub, 2).await;

    let elsewhere = served(&["probe.elsewhere.example"], Duration::from_secs(5)).await;
    let ca = ClientTls::new(&Trust::Ca(elsewhere.dir.path().join("probe.crt"))).unwrap();
    let refused =
        Subscriber::connect_with(elsewhere.addr, Some(TOKEN), Some(&ca), Start::Live, "test").await;
    assert!(
        matches!(refused, Err(ClientError::Tls { .. })),
        "{refused:?}"
    );
}

/// A relay that keeps every byte that crosses it, both ways.
async fn wiretap(to: SocketAddr) -> (SocketAddr, Arc<Mutex<Vec<u8>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let tap = seen.clone();
    tokio::spawn(async move {
        let (client, _) = listener.accept().await.unwrap();
        let server = tokio::net::TcpStream::connect(to).await.unwrap();
        let (cr, cw) = client.into_split();
        let (sr, sw) = server.into_split();
        let copy = |mut from: tokio::net::tcp::OwnedReadHalf,
                    mut into: tokio::net::tcp::OwnedWriteHalf,
                    seen: Arc<Mutex<Vec<u8>>>| async move {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                match from.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        seen.lock().unwrap().extend_from_slice(&buf[..n]);
                        if into.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                }
            }
        };
        let up = tokio::spawn(copy(cr, sw, tap.clone()));
        let down = tokio::spawn(copy(sr, cw, tap));
        let _ = tokio::join!(up, down);
    });
    (addr, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn neither_the_token_nor_the_samples_can_be_read_on_the_wire() {
    let probe = served(&["localhost"], Duration::from_secs(5)).await;
    let (relay, seen) = wiretap(probe.addr).await;
    let tls = pinned(&probe.tls.fingerprint);
    let mut sub = Subscriber::connect_with(relay, Some(TOKEN), Some(&tls), Start::Oldest, "test")
        .await
        .unwrap();
    assert!(!sub.host.hostname.is_empty());
    records(&mut sub, 20).await;
    drop(sub);
    let wire = seen.lock().unwrap().clone();
    assert!(
        wire.len() > 2_000,
        "the relay saw the stream ({} bytes)",
        wire.len()
    );
    let contains = |needle: &[u8]| wire.windows(needle.len()).any(|w| w == needle);
    assert!(!contains(TOKEN.as_bytes()), "the token crossed in clear");
    assert!(
        !contains(b"\"type\""),
        "the protocol's JSON crossed in clear"
    );
    assert!(
        !contains(b"\"hostname\""),
        "the host's facts crossed in clear"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_clients_over_tls_are_dropped_and_the_probe_serves_on() {
    let probe = served(&["localhost"], Duration::from_millis(300)).await;
    let tls = pinned(&probe.tls.fingerprint);
    // 300 idle sockets that never handshake, from another host (another loopback address):
    // at most 8 of them wait; the rest are closed at once.
    let mut idle = Vec::new();
    for _ in 0..300 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        idle.push(socket.connect(probe.addr).await.unwrap());
    }
    // Random bytes where the handshake should be.
    let mut noise = tokio::net::TcpStream::connect(probe.addr).await.unwrap();
    noise
        .write_all(&[0x16, 0x03, 0x01, 0xff, 0xff, 7, 7, 7, 7])
        .await
        .unwrap();
    // Hostile frames inside a good TLS session.
    let attacks: Vec<Vec<u8>> = vec![
        (1u32 << 30).to_be_bytes().to_vec(), // a 1 GiB length prefix
        [&9u32.to_be_bytes()[..], b"not json!"].concat(),
        vec![], // silent after the handshake
    ];
    for attack in attacks {
        let tcp = tokio::net::TcpStream::connect(probe.addr).await.unwrap();
        let connector = tokio_rustls::TlsConnector::from(tls.config.clone());
        let name = ClientTls::server_name("localhost").unwrap();
        let mut stream = connector.connect(name, tcp).await.unwrap();
        stream.write_all(&attack).await.unwrap();
        stream.flush().await.unwrap();
        let closed = common::closes_within(&mut stream, Duration::from_secs(3)).await;
        assert!(
            closed,
            "the probe kept a hostile TLS session open: {attack:?}"
        );
    }
    let mut buf = [0u8; 64];
    let noise_closed = tokio::time::timeout(Duration::from_secs(3), noise.read(&mut buf)).await;
    assert!(
        noise_closed.is_ok(),
        "the probe kept a garbage handshake open"
    );
    let mut sub =
        Subscriber::connect_with(probe.addr, Some(TOKEN), Some(&tls), Start::Live, "test")
            .await
            .unwrap();
    records(&mut sub, 3).await;
    drop(idle);
}
