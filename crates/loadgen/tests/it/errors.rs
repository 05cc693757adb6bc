//! A target that refuses, resets, stalls, lies or fails makes a run full of errors, counted by
#![allow(clippy::unwrap_used)]
//! kind, never a crash.

use crate::common;

use std::sync::Arc;

use analysis::summary::SummaryText as _;
use common::{closed_port, plan, raw_server, resetting_server, run};
use loadgen::commands::target::{TargetConfig, TargetServer};

#[test]
fn refused_connections_are_counted_and_the_run_completes() {
    let url = format!("http://{}/", closed_port());
    let (summary, _) = run(&plan(&["--rate", "200", "--duration", "500ms", &url]));
    let text = summary.to_text();
    assert_eq!(summary.requests.total, 100, "{text}");
    assert_eq!(summary.errors.get("refused"), Some(&100), "{text}");
    assert_eq!(summary.requests.success_ratio, 0.0);
    assert_eq!(
        summary.latency.corrected.count, 0,
        "refused requests have no latency"
    );
}

#[test]
fn timeouts_are_recorded_at_the_timeout() {
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    let url = target.url("/delay/3000");
    let p = plan(&[
        "--rate",
        "20",
        "--duration",
        "500ms",
        "--timeout",
        "300ms",
        &url,
    ]);
    let _cpu = common::exclusive();
    let (summary, _) = run(&p);
    let text = summary.to_text();
    // The last request is sent at 450 ms and given up on 300 ms later, not after 3 s.
    assert!(
        summary.duration.total_s < 1.0,
        "the run waited for the server\n{text}"
    );
    assert_eq!(summary.errors.get("timeout"), Some(&10), "{text}");
    let c = &summary.latency.corrected;
    assert_eq!(c.count, 10, "{text}");
    // Recorded at the 300 ms timeout, give or take the histogram's 0.1 % buckets.
    assert!(c.min_ns >= 299_700_000 && c.max_ns < 330_000_000, "{text}");
}

#[test]
fn server_errors_are_counted_by_status_class() {
    let target = TargetServer::start(TargetConfig::default()).unwrap();
    let (summary, _) = run(&plan(&[
        "--rate",
        "100",
        "--requests",
        "30",
        &target.url("/status/503"),
    ]));
    let text = summary.to_text();
    assert_eq!(summary.status_codes.get("503"), Some(&30), "{text}");
    assert_eq!(summary.errors.get("http_5xx"), Some(&30), "{text}");
    assert_eq!(summary.requests.responses, 30, "{text}");
    assert_eq!(summary.requests.ok, 0, "{text}");
    assert_eq!(
        summary.latency.corrected.count, 30,
        "a 503 is still a response with a latency"
    );
}

#[test]
fn resets_are_counted() {
    let url = format!("http://{}/", resetting_server());
    let (summary, _) = run(&plan(&["--rate", "100", "--requests", "20", &url]));
    assert_eq!(
        summary.errors.get("reset"),
        Some(&20),
        "{}",
        summary.to_text()
    );
}

#[test]
fn garbage_instead_of_http_is_a_protocol_error() {
    let url = format!(
        "http://{}/",
        raw_server(|_| Some(b"SSH-2.0-OpenSSH\r\n\r\n".to_vec()))
    );
    let (summary, _) = run(&plan(&["--rate", "100", "--requests", "10", &url]));
    assert_eq!(
        summary.errors.get("protocol"),
        Some(&10),
        "{}",
        summary.to_text()
    );
}

#[test]
fn a_truncated_body_is_a_body_read_error() {
    let url = format!(
        "http://{}/",
        raw_server(|_| Some(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten..".to_vec()))
    );
    let (summary, _) = run(&plan(&["--rate", "100", "--requests", "10", &url]));
    let text = summary.to_text();
    assert_eq!(summary.errors.get("body_read"), Some(&10), "{text}");
    assert_eq!(summary.requests.ok, 0, "{text}");
    assert_eq!(
        summary.bytes.in_total, 100,
        "the ten bytes that came are counted\n{text}"
    );
}

#[test]
fn tls_needs_a_trusted_certificate_or_insecure() {
    let addr = tls_server();
    let url = format!("https://localhost:{}/", addr.port());
    let (summary, _) = run(&plan(&["--rate", "100", "--requests", "10", &url]));
    assert_eq!(
        summary.errors.get("tls"),
        Some(&10),
        "{}",
        summary.to_text()
    );
    let (summary, _) = run(&plan(&[
        "--rate",
        "100",
        "--requests",
        "10",
        "--insecure",
        &url,
    ]));
    assert_eq!(summary.requests.ok, 10, "{}", summary.to_text());
    let (summary, _) = run(&plan(&[
        "--rate",
        "100",
        "--requests",
        "10",
        "-k",
        "--h2",
        &url,
    ]));
    assert_eq!(summary.requests.ok, 10, "{}", summary.to_text());
    assert_eq!(
        summary.generator.connections_opened,
        summary.generator.threads as u64
    );
}

/// An HTTPS server with a self-signed certificate for `localhost`, speaking HTTP/1.1 and h2.
fn tls_server() -> std::net::SocketAddr {
    use http_body_util::Full;
    use hyper::service::service_fn;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let der = cert.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::try_from(cert.signing_key.serialize_der()).unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![der], key)
    .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    common::serve_each(move |tcp| {
        let acceptor = acceptor.clone();
        async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service = service_fn(|_req| async {
                Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                    bytes::Bytes::from_static(b"secure"),
                )))
            });
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tls), service)
                .await;
        }
    })
}
