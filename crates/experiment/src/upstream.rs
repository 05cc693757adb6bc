//! The local upstream that `/proxy` fetches (003's I/O-bound handler fetched an external page;
//! an experiment never leaves the machine): a fixed page served with keep-alive on 127.0.0.1,
//! on a thread and runtime of its own so that nothing the runner does delays it.

use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

/// The page served: about the size of a small HTML page, the same on every run.
pub fn page() -> Bytes {
    let mut html =
        String::from("<!doctype html><html><head><title>upstream</title></head><body>\n");
    for i in 0..40 {
        html.push_str(&format!(
            "<p>Paragraph {i}: the upstream of Showdown's /proxy endpoint serves this page.</p>\n"
        ));
    }
    html.push_str("</body></html>\n");
    Bytes::from(html)
}

/// A running upstream; it stops when dropped.
#[derive(Debug)]
pub struct Upstream {
    pub addr: SocketAddr,
    pub body: Bytes,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Upstream {
    /// Binds 127.0.0.1 on a free port and serves [`page`].
    pub fn start() -> std::io::Result<Upstream> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let body = page();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = body.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name("upstream".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::select! {
                        _ = stopped => {}
                        _ = serve(listener, served) => {}
                    }
                })
            })?;
        Ok(Upstream {
            addr,
            body,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT/page`.
    pub fn url(&self) -> String {
        format!("http://{}/page", self.addr)
    }
}

async fn serve(listener: tokio::net::TcpListener, body: Bytes) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        let body = body.clone();
        let service = service_fn(move |_request| {
            let body = body.clone();
            async move {
                let mut response = hyper::Response::new(Full::new(body));
                response.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static("text/html; charset=utf-8"),
                );
                Ok::<_, std::convert::Infallible>(response)
            }
        });
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
