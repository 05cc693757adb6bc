//! `probe serve` over real TCP: resuming, tokens, hostile clients, gaps, clocks.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::{Duration, Instant};

use probe::client::{ClientError, Incoming, Subscriber};
use probe::protocol::{Record, Start};
use probe::server::ServeConfig;
use tokio::io::AsyncWriteExt;

use common::{read_records, served};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_reconnects_misses_no_sample() {
    let probe = served(ServeConfig::default(), 20, 10_000).await;
    let mut sub = Subscriber::connect(probe.addr, None, Start::Oldest, "test")
        .await
        .unwrap();
    assert!(sub.host.cpus >= 1);
    let (first, gaps) = read_records(&mut sub, 10).await;
    assert!(gaps.is_empty());
    // The link is cut (no bye) while the probe keeps sampling.
    drop(sub);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let last = *first.last().unwrap();
    let mut sub = Subscriber::connect(
        probe.addr,
        None,
        Start::After {
            seq: last,
            instance: None,
        },
        "test",
    )
    .await
    .unwrap();
    let (second, gaps) = read_records(&mut sub, 20).await;
    assert!(gaps.is_empty(), "{gaps:?}");
    let all: Vec<u64> = first.into_iter().chain(second).collect();
    let expected: Vec<u64> = (all[0]..all[0] + all.len() as u64).collect();
    assert_eq!(
        all, expected,
        "every record once, in order, across the reconnection"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_evicted_before_a_reconnection_are_reported_as_a_gap() {
    let probe = served(ServeConfig::default(), 10, 20).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let mut sub = Subscriber::connect(
        probe.addr,
        None,
        Start::After {
            seq: 0,
            instance: None,
        },
        "test",
    )
    .await
    .unwrap();
    assert!(sub.oldest_seq > 1);
    let (seqs, gaps) = read_records(&mut sub, 5).await;
    assert_eq!(gaps.len(), 1);
    let (from, to) = gaps[0];
    assert_eq!(from, 1);
    assert_eq!(seqs[0], to + 1, "the stream goes on right after the gap");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_refused_slowly_and_the_right_one_accepted() {
    let config = ServeConfig {
        token: Some("correct horse battery staple".into()),
        ..Default::default()
    };
    let probe = served(config, 50, 1000).await;
    let started = Instant::now();
    let wrong = Subscriber::connect(probe.addr, Some("guess"), Start::Live, "test").await;
    assert!(
        matches!(&wrong, Err(ClientError::Refused(r)) if r == "wrong token"),
        "{wrong:?}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(450),
        "a wrong token is answered after a delay"
    );
    let none = Subscriber::connect(probe.addr, None, Start::Live, "test").await;
    assert!(matches!(none, Err(ClientError::Refused(_))));
    let mut right = Subscriber::connect(
        probe.addr,
        Some("correct horse battery staple"),
        Start::Live,
        "test",
    )
    .await
    .unwrap();
    read_records(&mut right, 2).await;
}

/// Clients with a wrong token, waiting out their refusal's delay, hold no subscriber slot and
/// at most `PENDING_PER_ADDRESS` places from one address: twenty of them do not keep loadgen
/// out, and the ones beyond the cap are closed at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_have_not_authenticated_cannot_lock_the_probe() {
    let config = ServeConfig {
        token: Some("right".into()),
        max_subscribers: 2,
        ..Default::default()
    };
    let probe = served(config, 50, 1000).await;
    let hello =
        br#"{"type":"hello","version":1,"client":"guess","token":"wrong","start":{"from":"live"}}"#;
    let frame = [&(hello.len() as u32).to_be_bytes()[..], &hello[..]].concat();
    let mut attackers = Vec::new();
    for _ in 0..20 {
        // From another loopback address than loadgen's, as from another host.
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        let mut stream = socket.connect(probe.addr).await.unwrap();
        let _ = stream.write_all(&frame).await;
        attackers.push(stream);
    }
    let started = Instant::now();
    let mut sub = Subscriber::connect(probe.addr, Some("right"), Start::Live, "loadgen")
        .await
        .unwrap();
    read_records(&mut sub, 2).await;
    assert!(started.elapsed() < Duration::from_secs(3));
    let mut closed = 0;
    for stream in &mut attackers {
        if common::closes_within(stream, Duration::from_millis(300)).await {
            closed += 1;
        }
    }
    let limit = probe::server::PENDING_PER_ADDRESS;
    assert!(
        closed >= 20 - limit,
        "{closed} of 20 closed at once: at most {limit} may wait"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_clients_are_dropped_and_the_probe_serves_on() {
    let config = ServeConfig {
        hello_timeout: Duration::from_millis(300),
        ..Default::default()
    };
    let probe = served(config, 50, 1000).await;
    let attacks: Vec<Vec<u8>> = vec![
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(), // not our protocol
        0xFFFF_FFFFu32.to_be_bytes().to_vec(),         // a 4 GiB frame
        [&100u32.to_be_bytes()[..], b"{\"type\":\"hel"].concat(), // truncated
        [&9u32.to_be_bytes()[..], b"not json!"].concat(), // malformed
        [&14u32.to_be_bytes()[..], br#"{"type":"bye"}"#].concat(), // bye before hello
        vec![],                                        // silent: no hello at all
    ];
    for attack in attacks {
        let mut stream = tokio::net::TcpStream::connect(probe.addr).await.unwrap();
        stream.write_all(&attack).await.unwrap();
        // The probe answers or closes; it must not hang on us forever.
        let closed = common::closes_within(&mut stream, Duration::from_secs(3)).await;
        assert!(
            closed,
            "the probe kept a hostile connection open: {attack:?}"
        );
    }
    let mut sub = Subscriber::connect(probe.addr, None, Start::Live, "test")
        .await
        .unwrap();
    read_records(&mut sub, 3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_subscriber_cap_refuses_with_the_flag_to_raise() {
    let config = ServeConfig {
        max_subscribers: 1,
        ..Default::default()
    };
    let probe = served(config, 50, 1000).await;
    let _first = Subscriber::connect(probe.addr, None, Start::Live, "test")
        .await
        .unwrap();
    let second = Subscriber::connect(probe.addr, None, Start::Live, "test").await;
    assert!(
        matches!(&second, Err(ClientError::Refused(r)) if r.contains("--max-subscribers")),
        "{second:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_pong_estimates_the_clock_offset() {
    let shift = 5_000_000_000i64;
    let config = ServeConfig {
        clock_shift_ns: shift,
        ..Default::default()
    };
    let probe = served(config, 100, 1000).await;
    let mut sub = Subscriber::connect(probe.addr, None, Start::Live, "test")
        .await
        .unwrap();
    for _ in 0..5 {
        sub.ping().await.unwrap();
        loop {
            if let Some(Incoming::Pong(_)) = sub.next().await.unwrap() {
                break;
            }
        }
    }
    let best = sub.clock().best().unwrap();
    assert_eq!(sub.clock().samples(), 5);
    // Same host: the true offset is exactly the shift; the estimate is off by at most RTT/2.
    let error = (best.mono_offset_ns - shift).unsigned_abs();
    assert!(
        error <= best.rtt_ns / 2 + 1,
        "offset {} ns, rtt {} ns",
        best.mono_offset_ns,
        best.rtt_ns
    );
    assert!(best.rtt_ns < 50_000_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_roll_starts_in_the_past() {
    let probe = served(ServeConfig::default(), 20, 10_000).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let connected_at = probe::clock::mono_ns();
    let mut sub = Subscriber::connect(probe.addr, None, Start::Back { ns: 200_000_000 }, "test")
        .await
        .unwrap();
    let first = loop {
        if let Some(Incoming::Record {
            record: Record::Sample(s),
            ..
        }) = sub.next().await.unwrap()
        {
            break s;
        }
    };
    let age = connected_at - first.mono_ns;
    assert!(
        (150_000_000..=260_000_000).contains(&age),
        "first sample {age} ns before connecting"
    );
}
