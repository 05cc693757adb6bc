//! The worker for TLS and HTTP/2: one thread, its pacer or its closed-loop clients, its
//! connections, its recorder, through hyper. (Plain `http://` over HTTP/1.1 runs the event loop
//! of `eventloop.rs` instead: one wake-up per request, responses timed by the kernel.) Both
//! follow the rules of `workload.rs`: which requests a worker sends, its share of connections,
//! the batch window, when intervals close.
//!
//! Each worker runs a single-threaded tokio runtime, like one of wrk's event loops, so that its
//! state needs no locks: the recorder, the random generator and the connection pool sit in
//! `RefCell`s owned by the thread.
//!
//! # The open-loop connection pool (HTTP/1.1)
//!
//! A request due now goes to an idle connection if there is one; otherwise a new connection is
//! opened for it, unless the worker already has its share of `--max-connections`, in which case
//! it waits in a FIFO queue for the next connection to free up (counted, and still timed from
//! its intended send time). So the pool grows as far as the server's slowness requires and no
//! further. Each connection is one task that drives its own I/O while it waits for work, so a
//! keep-alive connection that the server closes is noticed and reopened on its next request.
//!
//! With HTTP/2 each worker multiplexes all its requests over one connection, reopened if lost.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http2;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::{spawn_local, LocalSet};

use crate::engine::client::{exchange_h2, H1Conn};
use crate::engine::clock::{self, Nanos};
use crate::engine::recorder::{Recorder, WorkerMessage};
use crate::engine::shutdown::{Shutdown, Stop};
use crate::engine::timer::{precise_thread, PreciseTimer};
use crate::engine::workload::WorkerError;
use crate::engine::workload::{claim, Job, RunShared, WorkerLoad};
use store::model::ErrorKind;

/// Where an idle connection task waits for its next job.
#[derive(Default)]
struct Slot {
    job: Cell<Option<Job>>,
    closed: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

impl Slot {
    fn give(&self, job: Job) -> bool {
        if self.closed.get() {
            return false;
        }
        self.job.set(Some(job));
        if let Some(w) = self.waker.take() {
            w.wake();
        }
        true
    }

    fn close(&self) {
        self.closed.set(true);
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    /// Resolves to the next job, or `None` once the pool closes.
    fn wait(&self) -> SlotWait<'_> {
        SlotWait(self)
    }
}

struct SlotWait<'a>(&'a Slot);

impl Future for SlotWait<'_> {
    type Output = Option<Job>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Job>> {
        if let Some(job) = self.0.job.take() {
            return Poll::Ready(Some(job));
        }
        if self.0.closed.get() {
            return Poll::Ready(None);
        }
        self.0.waker.set(Some(cx.waker().clone()));
        Poll::Pending
    }
}

#[derive(Default)]
struct H1Pool {
    idle: Vec<Rc<Slot>>,
    pending: VecDeque<Job>,
    /// Connection tasks alive (each holds at most one connection).
    tasks: usize,
    closing: bool,
}

#[derive(Default)]
struct H2Pool {
    sender: Option<http2::SendRequest<Full<Bytes>>>,
    connecting: bool,
}

struct Worker {
    index: usize,
    shared: Arc<RunShared>,
    max_connections: usize,
    rec: RefCell<Recorder>,
    rng: RefCell<SmallRng>,
    h1: RefCell<H1Pool>,
    h2: RefCell<H2Pool>,
    h2_ready: Notify,
    drained: Notify,
    stop: watch::Receiver<Stop>,
}

/// Runs worker `index` on this thread (a thread of its own): a single-threaded tokio runtime
/// with hyper's client. Returns an error only if it could not start working.
pub(crate) fn run_thread(
    index: usize,
    shared: Arc<RunShared>,
    tx: mpsc::UnboundedSender<WorkerMessage>,
    shutdown: Shutdown,
) -> Result<(), WorkerError> {
    precise_thread();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| WorkerError::Runtime { index, source })?;
    let local = LocalSet::new();
    let result = local.block_on(&rt, run(index, shared, tx, shutdown));
    // Connections left (cancelled at the end) are closed inside the runtime.
    let _guard = rt.enter();
    drop(local);
    result
}

async fn run(
    index: usize,
    shared: Arc<RunShared>,
    tx: mpsc::UnboundedSender<WorkerMessage>,
    shutdown: Shutdown,
) -> Result<(), WorkerError> {
    let recorder = shared.recorder(index, tx);
    let max_connections = shared.max_connections(index);
    let worker = Rc::new(Worker {
        index,
        max_connections,
        rec: RefCell::new(recorder),
        rng: RefCell::new(SmallRng::from_rng(&mut rand::rng())),
        h1: RefCell::default(),
        h2: RefCell::default(),
        h2_ready: Notify::new(),
        drained: Notify::new(),
        stop: shutdown.subscribe(),
        shared,
    });
    let ticker = spawn_local(ticker(worker.clone()));
    let mut stop = shutdown.subscribe();
    let started = match &worker.shared.load {
        WorkerLoad::Open { .. } => worker.clone().pace(&mut stop).await,
        WorkerLoad::Closed { .. } => {
            let clients: Vec<_> = (0..max_connections)
                .map(|_| spawn_local(worker.clone().closed_client()))
                .collect();
            for client in clients {
                tokio::select! {
                    _ = client => {}
                    _ = stop.wait_for(|s| *s != Stop::Running) => break,
                }
            }
            Ok(())
        }
    };
    worker.drain(&mut stop).await;
    worker.close_pool();
    ticker.abort();
    let now = clock::now();
    let mut rec = worker.rec.borrow_mut();
    let left = rec.in_flight;
    if left > 0 {
        rec.cancelled(now, left);
    }
    rec.finish(now, clock::thread_cpu(), Duration::ZERO);
    started.map_err(|source| WorkerError::Pace { index, source })
}

/// Closes intervals on time even when nothing happens.
async fn ticker(worker: Rc<Worker>) {
    loop {
        let now = clock::now();
        let roll = worker.shared.next_roll(now);
        tokio::time::sleep(Duration::from_nanos(roll.saturating_sub(now))).await;
        worker.rec.borrow_mut().roll_to(clock::now());
    }
}

impl Worker {
    /// The open loop: issues this worker's requests at their intended times.
    async fn pace(self: Rc<Self>, stop: &mut watch::Receiver<Stop>) -> std::io::Result<()> {
        let WorkerLoad::Open {
            schedule, limit, ..
        } = &self.shared.load
        else {
            return Ok(());
        };
        let timer = PreciseTimer::new()?;
        self.ready_connections();
        let mut arrivals = self.shared.arrivals(self.index);
        // Requests dispatched back to back without giving connections a turn.
        let mut burst = 0u32;
        loop {
            let seq = arrivals.seq();
            if *stop.borrow() != Stop::Running || limit.is_some_and(|n| seq >= n) {
                break;
            }
            let Some(due) = arrivals.due(schedule) else {
                break;
            };
            let intended = self.shared.start + clock::nanos(due);
            if intended > clock::now() {
                burst = 0;
                let lead = self.shared.lead();
                let wake = self.shared.release_at(intended).saturating_sub(lead);
                tokio::select! {
                    biased;
                    _ = stop.changed() => continue,
                    slept = timer.sleep_until(wake) => slept?,
                }
                // Poisson: woken early, let the connections run until the instant.
                while lead > 0 && clock::now() < intended {
                    tokio::task::yield_now().await;
                }
            } else if burst >= 16 {
                // Behind schedule: catch up, but let responses be read meanwhile.
                burst = 0;
                tokio::task::yield_now().await;
            }
            self.dispatch(Job {
                seq,
                intended,
                resent_from: None,
            });
            burst += 1;
            arrivals.advance();
        }
        Ok(())
    }

    /// Hands a due request to a connection, a new connection, or the queue.
    fn dispatch(self: &Rc<Self>, job: Job) {
        let now = clock::now();
        self.rec.borrow_mut().requested(now);
        if self.shared.connector.h2 {
            spawn_local(self.clone().run_h2(job));
            return;
        }
        let mut pool = self.h1.borrow_mut();
        while let Some(slot) = pool.idle.pop() {
            if slot.give(job) {
                return;
            }
        }
        if pool.tasks < self.max_connections {
            pool.tasks += 1;
            drop(pool);
            spawn_local(self.clone().h1_connection(Some(job)));
            return;
        }
        pool.pending.push_back(job);
        drop(pool);
        self.rec.borrow_mut().waited_for_connection(now);
    }

    /// Opens this worker's share of the ready connections (HTTP/1.1; an HTTP/2 worker has
    /// one connection, opened by its first request).
    fn ready_connections(self: &Rc<Self>) {
        if self.shared.connector.h2 {
            return;
        }
        let ready = self
            .shared
            .ready_connections(self.index)
            .min(self.max_connections);
        self.h1.borrow_mut().tasks += ready;
        for _ in 0..ready {
            spawn_local(self.clone().h1_connection(None));
        }
    }

    /// One pooled HTTP/1.1 connection: runs jobs until the pool closes. Without a first job,
    /// it is opened first and waits in the pool (a ready connection; one that cannot be opened
    /// leaves the pool to grow on demand).
    async fn h1_connection(self: Rc<Self>, first: Option<Job>) {
        let mut conn = None;
        let mut next = first;
        if next.is_none() {
            let began = clock::now();
            let timeout = Duration::from_nanos(self.shared.timeout);
            if let Ok(Ok(c)) =
                tokio::time::timeout(timeout, self.shared.connector.connect_h1()).await
            {
                let now = clock::now();
                self.rec.borrow_mut().connection_opened(now, now - began);
                conn = Some(c);
                next = self.next_h1_job(&mut conn).await;
            }
        }
        while let Some(job) = next {
            self.run_h1(&mut conn, job).await;
            next = self.next_h1_job(&mut conn).await;
        }
        if conn.is_some() {
            self.rec.borrow_mut().connection_closed();
        }
        self.h1.borrow_mut().tasks -= 1;
    }

    async fn next_h1_job(&self, conn: &mut Option<H1Conn>) -> Option<Job> {
        let slot = {
            let mut pool = self.h1.borrow_mut();
            if let Some(job) = pool.pending.pop_front() {
                return Some(job);
            }
            if pool.closing {
                return None;
            }
            let slot = Rc::new(Slot::default());
            pool.idle.push(slot.clone());
            slot
        };
        if let Some(c) = conn.as_mut() {
            match c.drive(slot.wait()).await {
                Some(job) => return job,
                None => {
                    // The server closed the idle connection; reopen on the next job.
                    *conn = None;
                    self.rec.borrow_mut().connection_closed();
                }
            }
        }
        slot.wait().await
    }

    fn close_pool(&self) {
        let mut pool = self.h1.borrow_mut();
        pool.closing = true;
        for slot in pool.idle.drain(..) {
            slot.close();
        }
    }

    /// One closed-loop client: sends its next request when the previous one completes.
    async fn closed_client(self: Rc<Self>) {
        let mut conn = None;
        while let Some(seq) = claim(&self.shared, *self.stop.borrow()) {
            let now = clock::now();
            self.rec.borrow_mut().requested(now);
            let job = Job {
                seq,
                intended: now,
                resent_from: None,
            };
            if self.shared.connector.h2 {
                self.clone().run_h2(job).await;
            } else {
                self.run_h1(&mut conn, job).await;
            }
        }
        if conn.is_some() {
            self.rec.borrow_mut().connection_closed();
        }
    }

    /// Ends a request that could not be sent.
    fn fail_unsent(&self, job: Job, kind: ErrorKind) {
        self.rec
            .borrow_mut()
            .failed_unsent(clock::now(), job.intended, kind);
        self.after_finish();
    }

    fn after_finish(&self) {
        if self.rec.borrow().in_flight == 0 {
            self.drained.notify_one();
        }
    }

    /// Whether a job waited so long for a connection that it has timed out unsent.
    fn expired(&self, job: Job) -> bool {
        clock::now().saturating_sub(job.intended) >= self.shared.timeout
    }

    fn build(&self, seq: u64) -> (http::Request<Full<Bytes>>, u64) {
        let spec = self.shared.mix.pick(seq);
        spec.build(
            seq,
            self.shared.connector.h2,
            self.shared.keepalive,
            &mut *self.rng.borrow_mut(),
        )
    }

    /// Sends `job` over `conn`, opening it first if needed, and records the outcome.
    async fn run_h1(&self, conn: &mut Option<H1Conn>, job: Job) {
        if self.expired(job) {
            return self.fail_unsent(job, ErrorKind::Timeout);
        }
        if conn.as_ref().is_some_and(H1Conn::is_closed) {
            *conn = None;
            self.rec.borrow_mut().connection_closed();
        }
        let c = match conn {
            Some(c) => c,
            None => {
                let connect = self.shared.connector.connect_h1();
                let deadline = job.intended + self.shared.timeout;
                let began = clock::now();
                match tokio::time::timeout(left_until(deadline), connect).await {
                    Ok(Ok(c)) => {
                        let now = clock::now();
                        self.rec.borrow_mut().connection_opened(now, now - began);
                        conn.insert(c)
                    }
                    Ok(Err(kind)) => return self.fail_unsent(job, kind),
                    Err(_) => return self.fail_unsent(job, ErrorKind::Timeout),
                }
            }
        };
        let (request, body_len) = self.build(job.seq);
        let sent = clock::now();
        self.rec.borrow_mut().sent(sent, job.intended, body_len);
        let exchange = c.exchange(request, sent, sent + self.shared.timeout).await;
        let closed = c.is_closed();
        self.rec.borrow_mut().finished(job.intended, &exchange);
        if closed {
            *conn = None;
            self.rec.borrow_mut().connection_closed();
        }
        self.after_finish();
    }

    /// The worker's HTTP/2 connection, opened (once, for all waiting requests) if needed.
    async fn h2_sender(&self) -> Result<http2::SendRequest<Full<Bytes>>, ErrorKind> {
        loop {
            let wait = {
                let mut pool = self.h2.borrow_mut();
                if let Some(sender) = &pool.sender {
                    if !sender.is_closed() {
                        return Ok(sender.clone());
                    }
                    pool.sender = None;
                    self.rec.borrow_mut().connection_closed();
                }
                if pool.connecting {
                    Some(self.h2_ready.notified())
                } else {
                    pool.connecting = true;
                    None
                }
            };
            if let Some(notified) = wait {
                notified.await;
                continue;
            }
            let began = clock::now();
            let result = self.shared.connector.connect_h2().await;
            let mut pool = self.h2.borrow_mut();
            pool.connecting = false;
            self.h2_ready.notify_waiters();
            let sender = result?;
            pool.sender = Some(sender.clone());
            let now = clock::now();
            self.rec.borrow_mut().connection_opened(now, now - began);
            return Ok(sender);
        }
    }

    async fn run_h2(self: Rc<Self>, job: Job) {
        if self.expired(job) {
            return self.fail_unsent(job, ErrorKind::Timeout);
        }
        let deadline = job.intended + self.shared.timeout;
        let mut sender = match tokio::time::timeout(left_until(deadline), self.h2_sender()).await {
            Ok(Ok(sender)) => sender,
            Ok(Err(kind)) => return self.fail_unsent(job, kind),
            Err(_) => return self.fail_unsent(job, ErrorKind::Timeout),
        };
        let (request, body_len) = self.build(job.seq);
        let sent = clock::now();
        self.rec.borrow_mut().sent(sent, job.intended, body_len);
        let exchange = exchange_h2(&mut sender, request, sent, sent + self.shared.timeout).await;
        self.rec.borrow_mut().finished(job.intended, &exchange);
        self.after_finish();
    }

    /// Waits for requests in flight: until they are done if the run ended normally; for the
    /// grace period if it was stopped; not at all if it was aborted.
    async fn drain(&self, stop: &mut watch::Receiver<Stop>) {
        let mut grace_ends: Option<tokio::time::Instant> = None;
        loop {
            if self.rec.borrow().in_flight == 0 {
                return;
            }
            let state = *stop.borrow_and_update();
            match state {
                Stop::Abort => return,
                Stop::Finish if grace_ends.is_none() => {
                    grace_ends = Some(tokio::time::Instant::now() + self.shared.grace);
                    // Stopping means sending nothing more, queued requests included.
                    let queued = self.h1.borrow_mut().pending.len() as u64;
                    self.h1.borrow_mut().pending.clear();
                    if queued > 0 {
                        self.rec.borrow_mut().cancelled(clock::now(), queued);
                        continue;
                    }
                }
                _ => {}
            }
            let grace = async {
                match grace_ends {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = self.drained.notified() => {}
                changed = stop.changed() => if changed.is_err() { return },
                _ = grace => return,
            }
        }
    }
}

fn left_until(deadline: Nanos) -> Duration {
    Duration::from_nanos(deadline.saturating_sub(clock::now()))
}
