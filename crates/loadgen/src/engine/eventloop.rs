//! The plain HTTP/1.1 worker: one `epoll` loop per thread, no async runtime on the hot path.
//!
//! This is the path for `http://` targets (TLS and HTTP/2 go through hyper in `worker.rs`),
//! built to cost as little per request as wrk2 while releasing every request at its own time.
//! What makes it cheap:
//!
//! - **One wake-up per request, not two.** A request's response is not waited for: the socket
//!   is registered for its peer's close only, so its data does not wake the thread. Responses
//!   are collected at the next wake-up, which the schedule brings anyway (the next request's
//!   time), and each is timed by the kernel: `SO_TIMESTAMPNS` stamps every segment as it
//!   arrives, so the completion time is the arrival of the response's last byte, not the moment
//!   the thread got round to reading it. When the next wake-up is further off than
//!   [`LAZY_WINDOW`] (low rates, the end of the run, a closed loop), or a response is only
//!   partly in, or still not in after two wake-ups' reads (a slow server: [`LAZY_READS`]),
//!   the socket is armed to wake the thread on data, as any client would.
//! - **One timer, re-armed only when the deadline changes**: a `timerfd` on
//!   `CLOCK_MONOTONIC` at the absolute time of the next request (or of the next interval's
//!   close, the earliest timeout, the grace period's end).
//! - **No sleep shorter than a wake-up**: a send due sooner than a timed wake-up's CPU or
//!   lateness here ([`floor::spin_window`], about 20 µs on these VMs) is waited for by polling
//!   the clock, then the sockets once; arming the timer alone cost 36 % of a thread pacing
//!   60,000 req/s here. The time polled is left out of the thread's busy share.
//! - **No allocation per request**: a fixed request's bytes are made once per run; responses
//!   are parsed in one read buffer per thread and counted, not kept.
//!
//! The recording is the same as the hyper path's: the same [`Recorder`] events in the same
//! order, the same error kinds, the same pool rules (grow on demand up to the worker's share of
//! `--max-connections`, then queue, counted).

use std::collections::VecDeque;
use std::io::IoSliceMut;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use http::Method;
use nix::sys::socket::{recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use rustix::buffer::spare_capacity;
use rustix::event::epoll::{self, EventData, EventFlags};
use rustix::io::Errno;
use rustix::net::{AddressFamily, SendFlags, SocketFlags, SocketType};
use rustix::time::{
    timerfd_create, timerfd_settime, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec,
};
use tokio::sync::{mpsc, watch};

use crate::engine::arrivals::Arrivals;
use crate::engine::client::classify_connect;
use crate::engine::clock::{self, Nanos};
use crate::engine::floor;
use crate::engine::h1response::{Progress, ResponseReader};
use crate::engine::recorder::{Exchange, Recorder, WorkerMessage};
use crate::engine::shutdown::{Shutdown, Stop};
use crate::engine::timer::{once_at, precise_thread};
use crate::engine::workload::WorkerError;
use crate::engine::workload::{claim, Job, RunShared, WorkerLoad};
use store::model::ErrorKind;

/// Responses are left for the next wake-up only when it comes within this; otherwise their
/// sockets wake the thread. A response that fills the socket's receive buffer before it is
/// read would make the server wait: 1 ms bounds that wait.
pub const LAZY_WINDOW: Nanos = 1_000_000;
/// A lazy response still not in after this many wake-ups' reads wakes the thread when it
/// comes: a slow server would otherwise cost a read of every socket in flight at every
/// wake-up (900 sockets 3,000 times a second at 300 ms and 3,000 req/s), and make the
/// generator the bottleneck it then blames. Two: at 20,000 req/s nginx's answers here come
/// after one to two gaps between requests.
const LAZY_READS: u8 = 2;
/// Connections being opened at once by one worker. Beyond that, requests wait for the first
/// of them rather than open more: a generator far behind its schedule would otherwise open
/// hundreds in a burst, overflow the server's accept queue, and then blame the server for the
/// SYN retransmissions it caused.
const MAX_CONNECTING: usize = 32;
/// The thread looks at the stop signal at least this often (on a grid of this period).
const MAX_SLEEP: Nanos = 50_000_000;
/// Requests released in one go when behind schedule, before responses get a turn.
const RELEASE_BATCH: usize = 64;
const TIMER: u64 = u64::MAX;

/// Aligned room for one `SCM_TIMESTAMPNS` control message (and a spare).
#[repr(C, align(8))]
struct ControlBuffer([u8; 64]);

enum Phase {
    /// Being opened, for `job` (sent once connected) or, `None`, to be ready before it is
    /// needed (`--ready-connections`).
    Connecting {
        began: Nanos,
        job: Option<Job>,
    },
    Idle,
    Busy(Busy),
}

#[derive(Clone, Copy)]
struct Busy {
    job: Job,
    sent: Nanos,
    first_byte: Option<Nanos>,
    /// Whether the socket wakes the thread when data comes.
    eager: bool,
    /// Reads at wake-ups that found nothing yet (see [`LAZY_READS`]).
    empty_reads: u8,
}

struct Conn {
    fd: OwnedFd,
    gen: u32,
    phase: Phase,
    interest: EventFlags,
    reader: ResponseReader,
    /// When the connection attempt or the request in flight times out.
    deadline: Nanos,
    /// Request bytes a write did not take.
    unsent: Vec<u8>,
    /// The kernel stamps its received data: responses may be read late, timed exactly.
    stamped: bool,
    /// The server has closed its side: no request goes on this connection after the current.
    peer_closed: bool,
    /// Responses read whole on it: a connection that has served one is a reused one.
    served: u32,
}

struct Engine {
    shared: Arc<RunShared>,
    rec: Recorder,
    rng: SmallRng,
    epoll: OwnedFd,
    timer: OwnedFd,
    /// The deadline the timer is set to, until it fires.
    armed: Option<Nanos>,
    /// A send due within this is waited for by polling the clock, not slept for
    /// ([`floor::spin_window`]).
    spin: Nanos,
    /// Time spent polling the clock for a send, ns: CPU spent, but not work (the busy share).
    polled: Nanos,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    next_gen: u32,
    idle: Vec<usize>,
    /// Busy connections whose responses are collected at wake-ups: (slot, generation).
    lazy: Vec<(usize, u32)>,
    pending: VecDeque<Job>,
    /// No connection times out before this (a lower bound: reached, the connections are
    /// looked through and it is set again).
    next_deadline: Nanos,
    /// Connections alive, connecting ones included.
    open: usize,
    /// Connections being opened.
    connecting: usize,
    max_connections: usize,
    /// Connections still to open before any request needs them (this worker's share of the
    /// plan's ready connections); set to 0 when an attempt fails.
    to_ready: usize,
    buf: Box<[u8]>,
    /// Each kind of request's bytes, when they are the same for every request.
    fixed: Vec<Option<(Box<[u8]>, u64)>>,
    wire: Vec<u8>,
    /// CLOCK_REALTIME − CLOCK_MONOTONIC, ns: turns the kernel's receive stamps into our clock.
    offset: i128,
    closed_loop: bool,
    /// The open loop's next request.
    arrivals: Arrivals,
    /// No more requests will be released.
    released_all: bool,
    grace_ends: Option<Nanos>,
    /// The stop signal as last seen.
    stop: Stop,
    /// Inside `serve_pending`.
    serving: bool,
}

/// Runs worker `index` on the calling thread until its share of the run is done.
pub(crate) fn run(
    index: usize,
    shared: Arc<RunShared>,
    tx: mpsc::UnboundedSender<WorkerMessage>,
    shutdown: Shutdown,
) -> Result<(), WorkerError> {
    precise_thread();
    let recorder = shared.recorder(index, tx);
    let mut stop = shutdown.subscribe();
    let mut engine = Engine::new(index, shared, recorder)
        .map_err(|source| WorkerError::EventLoopSetup { index, source })?;
    let result = engine.run(&mut stop);
    engine.finish();
    result.map_err(|source| WorkerError::EventLoop { index, source })
}

impl Engine {
    fn new(index: usize, shared: Arc<RunShared>, rec: Recorder) -> rustix::io::Result<Self> {
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        let timer = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        epoll::add(&epoll, &timer, EventData::new_u64(TIMER), EventFlags::IN)?;
        let max_connections = shared.max_connections(index);
        let to_ready = shared.ready_connections(index).min(max_connections);
        let closed_loop = matches!(shared.load, WorkerLoad::Closed { .. });
        let mut rng = SmallRng::from_rng(&mut rand::rng());
        let fixed = shared
            .mix
            .specs()
            .iter()
            .map(|spec| {
                spec.is_fixed().then(|| {
                    let mut bytes = Vec::new();
                    let len = spec.write_h1(0, shared.keepalive, &mut rng, &mut bytes);
                    (bytes.into_boxed_slice(), len)
                })
            })
            .collect();
        let arrivals = shared.arrivals(index);
        Ok(Engine {
            rec,
            rng,
            epoll,
            timer,
            armed: None,
            spin: floor::spin_window(),
            polled: 0,
            conns: Vec::new(),
            free: Vec::new(),
            next_gen: 0,
            idle: Vec::new(),
            lazy: Vec::new(),
            pending: VecDeque::new(),
            next_deadline: Nanos::MAX,
            open: 0,
            connecting: 0,
            max_connections,
            to_ready,
            buf: vec![0u8; 64 * 1024].into_boxed_slice(),
            fixed,
            wire: Vec::with_capacity(1024),
            offset: clock_offset(),
            closed_loop,
            arrivals,
            released_all: closed_loop,
            grace_ends: None,
            stop: Stop::Running,
            serving: false,
            shared,
        })
    }

    fn run(&mut self, stop: &mut watch::Receiver<Stop>) -> rustix::io::Result<()> {
        if self.closed_loop {
            for _ in 0..self.max_connections {
                match self.claim_job() {
                    Some(job) => self.open_for(job),
                    None => break,
                }
            }
        }
        self.ready_more();
        let mut events: Vec<epoll::Event> = Vec::with_capacity(256);
        loop {
            let now = clock::now();
            self.offset = clock_offset();
            self.collect_lazy();
            self.expire(now);
            self.rec.roll_to(clock::now());
            self.stop = *stop.borrow_and_update();
            match self.stop {
                Stop::Abort => return Ok(()),
                Stop::Finish if self.grace_ends.is_none() => self.start_finishing(now),
                _ => {}
            }
            let (behind, next) = self.release(now);
            if self.released_all && self.rec.in_flight == 0 && self.pending.is_empty() {
                return Ok(());
            }
            if self.grace_ends.is_some_and(|g| now >= g) {
                return Ok(());
            }
            let wake = self.plan(now, next);
            events.clear();
            let mut now = clock::now();
            // A wake-up this soon would cost more CPU than the wait and come after it: poll
            // the clock to it, then the sockets once without sleeping.
            if !behind && wake > now && wake - now <= self.spin {
                let from = now;
                while now < wake {
                    std::hint::spin_loop();
                    now = clock::now();
                }
                self.polled += now - from;
            }
            let poll_only = behind || wake <= now;
            if !poll_only {
                self.arm(wake)?;
            }
            let zero = Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            match epoll::wait(
                &self.epoll,
                spare_capacity(&mut events),
                poll_only.then_some(&zero),
            ) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(e) => return Err(e),
            }
            for ev in &events {
                let token = ev.data.u64();
                if token == TIMER {
                    self.armed = None;
                } else {
                    self.on_event(token, ev.flags);
                }
            }
        }
    }

    /// Stopping: nothing more is sent, queued requests included; a grace period for the rest.
    fn start_finishing(&mut self, now: Nanos) {
        self.released_all = true;
        self.grace_ends = Some(now + clock::nanos(self.shared.grace));
        if !self.pending.is_empty() {
            self.rec.cancelled(now, self.pending.len() as u64);
            self.pending.clear();
        }
    }

    /// The next request of the open loop, if any: its number and intended time.
    fn next_due(&self) -> Option<Job> {
        if self.released_all {
            return None;
        }
        let WorkerLoad::Open {
            schedule, limit, ..
        } = &self.shared.load
        else {
            return None;
        };
        let seq = self.arrivals.seq();
        if limit.is_some_and(|n| seq >= n) {
            return None;
        }
        let due = self.arrivals.due(schedule)?;
        Some(Job {
            seq,
            intended: self.shared.start + clock::nanos(due),
            resent_from: None,
        })
    }

    /// Releases every request due by `now`. Returns whether more were due than one go takes,
    /// and the next request not yet released (worked out once per wake-up, for `plan`).
    fn release(&mut self, now: Nanos) -> (bool, Option<Job>) {
        for _ in 0..RELEASE_BATCH {
            let Some(job) = self.next_due() else {
                self.released_all = true;
                return (false, None);
            };
            if job.intended > now {
                return (false, Some(job));
            }
            self.arrivals.advance();
            self.dispatch(job);
        }
        (true, self.next_due())
    }

    /// When to wake next, given the next request; arms lazy sockets if that is too far off.
    fn plan(&mut self, now: Nanos, next: Option<Job>) -> Nanos {
        // Poisson arrivals wake early: the loop then polls without sleeping (reading
        // responses meanwhile) until the request is due.
        let due = next.map(|job| {
            self.shared
                .release_at(job.intended)
                .saturating_sub(self.shared.lead())
        });
        if due.is_none_or(|d| d > now + LAZY_WINDOW) {
            self.wake_on_data();
        }
        let roll = self.shared.next_roll(now);
        // The next point of a fixed grid, not `now + MAX_SLEEP`: the same deadline for 50 ms,
        // so a closed loop, whose wake-ups are its responses, re-arms the timer once per
        // 50 ms rather than at every wake-up (2 % of its CPU unthrottled).
        let mut wake = roll.min((now / MAX_SLEEP + 1) * MAX_SLEEP);
        if let Some(d) = due {
            wake = wake.min(d);
        }
        wake = wake.min(self.next_deadline);
        if let Some(g) = self.grace_ends {
            wake = wake.min(g);
        }
        wake
    }

    fn arm(&mut self, deadline: Nanos) -> rustix::io::Result<()> {
        if self.armed == Some(deadline) {
            return Ok(());
        }
        // Arming also clears an expiry not yet read: the timer is never read.
        timerfd_settime(&self.timer, TimerfdTimerFlags::ABSTIME, &once_at(deadline))?;
        self.armed = Some(deadline);
        Ok(())
    }

    fn claim_job(&mut self) -> Option<Job> {
        let seq = claim(&self.shared, self.stop)?;
        let now = clock::now();
        self.rec.requested(now);
        Some(Job {
            seq,
            intended: now,
            resent_from: None,
        })
    }

    /// Hands a due request to an idle connection, a new one, or the queue.
    fn dispatch(&mut self, job: Job) {
        let now = clock::now();
        self.rec.requested(now);
        if !self.pending.is_empty() {
            // Behind older requests that wait for a connection.
            self.queue(job, now);
            self.serve_pending();
        } else if let Some(slot) = self.idle.pop() {
            self.send(slot, job);
        } else if self.may_open() {
            self.open_for(job);
        } else {
            self.queue(job, now);
        }
    }

    /// Whether a new connection may be opened now.
    fn may_open(&self) -> bool {
        self.open < self.max_connections && self.connecting < MAX_CONNECTING
    }

    /// Queues a request for the next free connection; counted as waiting for the connection
    /// cap only if the pool is at it (else it waits for connections being opened).
    fn queue(&mut self, job: Job, now: Nanos) {
        self.pending.push_back(job);
        if self.open >= self.max_connections {
            self.rec.waited_for_connection(now);
        }
    }

    /// Gives queued requests the free connections, oldest first: idle ones, then new ones up
    /// to the cap. Those that waited past their timeout end as timeouts, unsent.
    fn serve_pending(&mut self) {
        // A send that fails frees a connection and comes back here: the outer loop goes on.
        if self.serving {
            return;
        }
        self.serving = true;
        while let Some(&job) = self.pending.front() {
            if self.expired(job) {
                self.pending.pop_front();
                self.fail_unsent(job, ErrorKind::Timeout);
            } else if let Some(slot) = self.idle.pop() {
                self.pending.pop_front();
                self.send(slot, job);
            } else if self.may_open() {
                self.pending.pop_front();
                self.open_for(job);
            } else {
                break;
            }
        }
        self.serving = false;
    }

    fn expired(&self, job: Job) -> bool {
        clock::now().saturating_sub(job.intended) >= self.shared.timeout
    }

    fn fail_unsent(&mut self, job: Job, kind: ErrorKind) {
        self.rec.failed_unsent(clock::now(), job.intended, kind);
    }

    /// Opens a connection for `job` (sent once connected).
    fn open_for(&mut self, job: Job) {
        if self.expired(job) {
            return self.fail_unsent(job, ErrorKind::Timeout);
        }
        self.open(Some(job));
    }

    /// Opens connections to be ready before requests need them, up to this worker's share of
    /// the ready connections, a few at a time ([`MAX_CONNECTING`]).
    fn ready_more(&mut self) {
        while self.to_ready > 0 && self.may_open() {
            self.to_ready -= 1;
            self.open(None);
        }
    }

    /// A failed attempt: the job's, if any, ends unsent; a ready connection's stops the
    /// others being readied (requests open their own, and their failures are counted).
    fn open_failed(&mut self, job: Option<Job>, kind: ErrorKind) {
        match job {
            Some(job) => self.fail_unsent(job, kind),
            None => self.to_ready = 0,
        }
    }

    /// Opens a connection, for `job` or to be ready.
    fn open(&mut self, job: Option<Job>) {
        let addr = self.shared.connector.addr();
        let family = if addr.is_ipv4() {
            AddressFamily::INET
        } else {
            AddressFamily::INET6
        };
        let fd = match rustix::net::socket_with(
            family,
            SocketType::STREAM,
            SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
            None,
        ) {
            Ok(fd) => fd,
            Err(_) => return self.open_failed(job, ErrorKind::Connect),
        };
        // Requests are small and latency is what is measured: never wait to coalesce.
        let _ = rustix::net::sockopt::set_tcp_nodelay(&fd, true);
        // Without receive stamps, responses are read as they come.
        let stamped = setsockopt(&fd, sockopt::ReceiveTimestampns, &true).is_ok();
        let began = clock::now();
        match rustix::net::connect(&fd, &addr) {
            Ok(()) | Err(Errno::INPROGRESS) => {}
            Err(e) => return self.open_failed(job, classify_connect(&e.into())),
        }
        let slot = self.free.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.conns.len() - 1
        });
        self.next_gen = self.next_gen.wrapping_add(1);
        let gen = self.next_gen;
        let interest = EventFlags::OUT | EventFlags::RDHUP;
        if epoll::add(&self.epoll, &fd, token(slot, gen), interest).is_err() {
            self.free.push(slot);
            return self.open_failed(job, ErrorKind::Connect);
        }
        let deadline = job.map_or(began, |j| j.intended) + self.shared.timeout;
        self.conns[slot] = Some(Conn {
            fd,
            gen,
            phase: Phase::Connecting { began, job },
            deadline,
            interest,
            reader: ResponseReader::new(),
            unsent: Vec::new(),
            stamped,
            peer_closed: false,
            served: 0,
        });
        self.open += 1;
        self.connecting += 1;
        self.next_deadline = self.next_deadline.min(deadline);
    }

    fn on_event(&mut self, token: u64, flags: EventFlags) {
        let (slot, gen) = ((token & 0xffff_ffff) as usize, (token >> 32) as u32);
        let Some(conn) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        if conn.gen != gen {
            return;
        }
        match conn.phase {
            Phase::Connecting { began, job } => {
                let result = rustix::net::sockopt::socket_error(&conn.fd);
                match result {
                    Ok(Ok(())) => {
                        let now = clock::now();
                        conn.phase = Phase::Idle;
                        self.connecting -= 1;
                        self.rec.connection_opened(now, now - began);
                        match job {
                            Some(job) => self.send(slot, job),
                            None => {
                                // Woken only if the server closes it while it waits.
                                self.set_interest(slot, EventFlags::RDHUP);
                                self.idle.push(slot);
                            }
                        }
                        self.serve_pending();
                        self.ready_more();
                    }
                    Ok(Err(e)) | Err(e) => {
                        self.close(slot);
                        self.open_failed(job, classify_connect(&e.into()));
                        self.after_close();
                    }
                }
            }
            Phase::Idle => {
                // The server closed the idle connection (or spoke out of turn): reopen on the
                // next request.
                self.close(slot);
                self.after_close();
            }
            Phase::Busy(_) => {
                conn.peer_closed |= flags.intersects(EventFlags::RDHUP | EventFlags::HUP);
                if flags.contains(EventFlags::OUT) && !conn.unsent.is_empty() {
                    self.flush(slot);
                }
                if flags.intersects(
                    EventFlags::IN | EventFlags::RDHUP | EventFlags::HUP | EventFlags::ERR,
                ) {
                    self.read(slot);
                }
            }
        }
    }

    /// Writes `job` on the idle connection `slot`.
    fn send(&mut self, slot: usize, job: Job) {
        let now = clock::now();
        if now.saturating_sub(job.intended) >= self.shared.timeout {
            self.fail_unsent(job, ErrorKind::Timeout);
            if let Some(conn) = self.conns[slot].as_mut() {
                conn.phase = Phase::Idle;
            }
            self.idle.push(slot);
            return;
        }
        let spec_index = self.shared.mix.pick_index(job.seq);
        let spec = &self.shared.mix.specs()[spec_index];
        let head_request = spec.method == Method::HEAD;
        let body_len = match &self.fixed[spec_index] {
            Some((_, len)) => *len,
            None => {
                self.wire.clear();
                spec.write_h1(
                    job.seq,
                    self.shared.keepalive,
                    &mut self.rng,
                    &mut self.wire,
                )
            }
        };
        let eager = self.closed_loop;
        let keepalive = self.shared.keepalive;
        let Some(conn) = self.conns[slot].as_mut() else {
            return self.fail_unsent(job, ErrorKind::Reset);
        };
        let bytes: &[u8] = match &self.fixed[spec_index] {
            Some((bytes, _)) => bytes,
            None => &self.wire,
        };
        let stamped = conn.stamped;
        conn.reader.reset(head_request, !keepalive);
        // A request sent again is counted once, and timed from its first send.
        let sent = match job.resent_from {
            Some(first) => first,
            None => {
                self.rec.sent(now, job.intended, body_len);
                now
            }
        };
        let written = rustix::net::send(&conn.fd, bytes, SendFlags::NOSIGNAL);
        let eager = eager || !stamped;
        conn.phase = Phase::Busy(Busy {
            job,
            sent,
            first_byte: None,
            eager,
            empty_reads: 0,
        });
        let mut interest = EventFlags::RDHUP;
        if eager {
            interest |= EventFlags::IN;
        }
        match written {
            Ok(n) if n == bytes.len() => {}
            Ok(n) => {
                conn.unsent.extend_from_slice(&bytes[n..]);
                interest |= EventFlags::OUT;
            }
            Err(Errno::AGAIN) => {
                conn.unsent.extend_from_slice(bytes);
                interest |= EventFlags::OUT;
            }
            Err(e) => return self.complete(slot, Err((io_kind(e), clock::now()))),
        }
        let gen = conn.gen;
        conn.deadline = sent + self.shared.timeout;
        self.next_deadline = self.next_deadline.min(conn.deadline);
        self.set_interest(slot, interest);
        if !eager {
            self.lazy.push((slot, gen));
        }
    }

    fn set_interest(&mut self, slot: usize, interest: EventFlags) {
        let Some(conn) = self.conns[slot].as_mut() else {
            return;
        };
        if conn.interest != interest
            && epoll::modify(&self.epoll, &conn.fd, token(slot, conn.gen), interest).is_ok()
        {
            conn.interest = interest;
        }
    }

    /// Writes what a previous write left.
    fn flush(&mut self, slot: usize) {
        let Some(conn) = self.conns[slot].as_mut() else {
            return;
        };
        match rustix::net::send(&conn.fd, &conn.unsent, SendFlags::NOSIGNAL) {
            Ok(n) => {
                conn.unsent.drain(..n);
                if conn.unsent.is_empty() {
                    let interest = conn.interest - EventFlags::OUT;
                    self.set_interest(slot, interest);
                }
            }
            Err(Errno::AGAIN) => {}
            Err(e) => self.complete(slot, Err((io_kind(e), clock::now()))),
        }
    }

    /// Collects the responses of lazy connections.
    fn collect_lazy(&mut self) {
        let lazy = std::mem::take(&mut self.lazy);
        for &(slot, gen) in &lazy {
            if self.lazy_busy(slot, gen) {
                self.read(slot);
            }
        }
        // Those still waiting stay lazy (unless reading armed them).
        let mut kept = lazy;
        kept.retain(|&(slot, gen)| self.lazy_busy(slot, gen));
        kept.append(&mut self.lazy);
        self.lazy = kept;
    }

    fn lazy_busy(&self, slot: usize, gen: u32) -> bool {
        matches!(
            self.conns.get(slot).and_then(Option::as_ref),
            Some(Conn { gen: g, phase: Phase::Busy(Busy { eager: false, .. }), .. }) if *g == gen
        )
    }

    /// The next wake-up is far off: lazy sockets now wake the thread when data comes.
    fn wake_on_data(&mut self) {
        for (slot, gen) in std::mem::take(&mut self.lazy) {
            if !self.lazy_busy(slot, gen) {
                continue;
            }
            if let Some(Conn {
                phase: Phase::Busy(busy),
                interest,
                ..
            }) = self.conns[slot].as_mut()
            {
                busy.eager = true;
                let interest = *interest | EventFlags::IN;
                self.set_interest(slot, interest);
            }
        }
    }

    /// Reads what has arrived on the busy connection `slot`.
    fn read(&mut self, slot: usize) {
        let mut buf = std::mem::take(&mut self.buf);
        let offset = self.offset;
        let mut arm = false;
        let ended = loop {
            let Some(conn) = self.conns[slot].as_mut() else {
                break None;
            };
            let Phase::Busy(busy) = &mut conn.phase else {
                break None;
            };
            let mut control = ControlBuffer([0; 64]);
            let mut iov = [IoSliceMut::new(&mut buf)];
            let received = recvmsg::<()>(
                conn.fd.as_raw_fd(),
                &mut iov,
                Some(&mut control.0),
                MsgFlags::MSG_DONTWAIT,
            )
            .map(|msg| {
                let stamp = msg.cmsgs().ok().and_then(|mut c| {
                    c.find_map(|m| match m {
                        ControlMessageOwned::ScmTimestampns(ts) => Some(ts),
                        _ => None,
                    })
                });
                (msg.bytes, stamp)
            });
            let (n, stamp) = match received {
                Ok(r) => r,
                Err(nix::errno::Errno::EAGAIN) => {
                    if !busy.eager {
                        busy.empty_reads += 1;
                        if busy.empty_reads >= LAZY_READS {
                            busy.eager = true;
                            arm = !conn.interest.contains(EventFlags::IN);
                        }
                    }
                    break None;
                }
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => {
                    let kind = match e {
                        nix::errno::Errno::ETIMEDOUT => ErrorKind::Timeout,
                        _ if conn.reader.started() => ErrorKind::BodyRead,
                        _ => ErrorKind::Reset,
                    };
                    break Some(Err((kind, clock::now())));
                }
            };
            let at = match stamp {
                Some(ts) => {
                    let real = ts.tv_sec() as i128 * 1_000_000_000 + ts.tv_nsec() as i128;
                    u64::try_from(real - offset).unwrap_or_else(|_| clock::now())
                }
                None => {
                    // No stamp: timed now, and this connection's responses are read as
                    // they come from now on.
                    conn.stamped = false;
                    clock::now()
                }
            };
            if n == 0 {
                break Some(conn.reader.eof().map(|_| (at, true)).map_err(|k| (k, at)));
            }
            busy.first_byte.get_or_insert(at);
            match conn.reader.feed(&buf[..n]) {
                Ok(Progress::Done { close }) => break Some(Ok((at, close))),
                Ok(Progress::More) if n == buf.len() => continue,
                Ok(Progress::More) => {
                    // Partly in: the rest wakes the thread, so the server never waits on us.
                    busy.eager = true;
                    arm = !conn.interest.contains(EventFlags::IN);
                    break None;
                }
                Err(kind) => break Some(Err((kind, at))),
            }
        };
        self.buf = buf;
        if arm {
            if let Some(conn) = self.conns[slot].as_ref() {
                let interest = conn.interest | EventFlags::IN;
                self.set_interest(slot, interest);
            }
        }
        if let Some(outcome) = ended {
            self.complete(slot, outcome);
        }
    }

    /// Records the end of the busy connection's exchange: `Ok((completed, close))` or
    /// `Err((kind, when))`; then reuses or closes the connection.
    fn complete(&mut self, slot: usize, outcome: Result<(Nanos, bool), (ErrorKind, Nanos)>) {
        let Some(conn) = self.conns[slot].as_mut() else {
            return;
        };
        let Phase::Busy(busy) = conn.phase else {
            return;
        };
        if outcome.is_err() && busy.first_byte.is_none() && self.may_resend(slot, busy.job) {
            return self.resend(slot, busy);
        }
        let Some(conn) = self.conns[slot].as_mut() else {
            return;
        };
        let status = conn.reader.status;
        let bytes_in = conn.reader.body_bytes;
        // A response that came before the whole request was written (a 413, say) leaves the
        // request cut short on the wire: the connection cannot carry another.
        let cut_short = !conn.unsent.is_empty();
        let (completed, error, close) = match outcome {
            Ok((at, close)) => (at, None, close || conn.peer_closed || cut_short),
            Err((kind, at)) => (at, Some(kind), true),
        };
        let completed = completed.max(busy.sent);
        let exchange = Exchange {
            sent: busy.sent,
            first_byte: busy
                .first_byte
                .filter(|_| status.is_some())
                .map(|t| t.max(busy.sent)),
            completed,
            // A response cut short keeps its status only if its head came.
            status,
            bytes_in,
            error,
        };
        conn.unsent.clear();
        if error.is_none() {
            conn.served = conn.served.saturating_add(1);
        }
        self.rec.finished(busy.job.intended, &exchange);
        if close {
            self.close(slot);
            self.after_close();
        } else {
            self.free_conn(slot);
        }
    }

    /// Whether the request on `slot`, which ended in an error before any byte of its response,
    /// is one to send again on a new connection: as browsers and Go's client do (RFC 9110,
    /// 9.2.2), when the connection had served a response before (a server closes an idle
    /// keep-alive connection as the next request goes out: a race of the connection, not an
    /// answer of the server), its method is idempotent, and it has not been sent again already.
    fn may_resend(&self, slot: usize, job: Job) -> bool {
        let Some(conn) = self.conns[slot].as_ref() else {
            return false;
        };
        job.resent_from.is_none()
            && conn.served > 0
            && !conn.reader.started()
            && self.shared.mix.specs()[self.shared.mix.pick_index(job.seq)]
                .method
                .is_idempotent()
    }

    /// Closes `slot` and sends its request again on a new connection (or the first one free),
    /// counted once and timed from its first send; the resend is counted.
    fn resend(&mut self, slot: usize, busy: Busy) {
        self.close(slot);
        self.rec.resent(clock::now());
        let job = Job {
            resent_from: Some(busy.sent),
            ..busy.job
        };
        if self.closed_loop || self.may_open() {
            self.open_for(job);
        } else {
            self.pending.push_front(job);
            self.serve_pending();
        }
    }

    /// The connection is free: the next request of a closed loop, a queued one, or idle.
    fn free_conn(&mut self, slot: usize) {
        if let Some(conn) = self.conns[slot].as_mut() {
            conn.phase = Phase::Idle;
        }
        if self.closed_loop {
            match self.claim_job() {
                Some(job) => self.send(slot, job),
                None => {
                    self.close(slot);
                }
            }
            return;
        }
        self.idle.push(slot);
        self.serve_pending();
    }

    /// After a connection closed: a queued request or a closed-loop client gets a new one.
    fn after_close(&mut self) {
        if self.closed_loop {
            if let Some(job) = self.claim_job() {
                self.open_for(job);
            }
            return;
        }
        self.serve_pending();
    }

    fn close(&mut self, slot: usize) {
        let Some(conn) = self.conns[slot].take() else {
            return;
        };
        if matches!(conn.phase, Phase::Connecting { .. }) {
            self.connecting -= 1;
        } else {
            self.rec.connection_closed();
        }
        if matches!(conn.phase, Phase::Idle) {
            self.idle.retain(|&s| s != slot);
        }
        // Closing the descriptor takes it out of the epoll set.
        drop(conn);
        self.open -= 1;
        self.free.push(slot);
    }

    /// Ends what has run out of time, once the earliest deadline has passed.
    fn expire(&mut self, now: Nanos) {
        if now < self.next_deadline {
            return;
        }
        self.next_deadline = Nanos::MAX;
        for slot in 0..self.conns.len() {
            let Some(conn) = self.conns[slot].as_ref() else {
                continue;
            };
            let deadline = conn.deadline;
            if deadline > now {
                if !matches!(conn.phase, Phase::Idle) {
                    self.next_deadline = self.next_deadline.min(deadline);
                }
                continue;
            }
            match conn.phase {
                Phase::Connecting { job, .. } => {
                    self.close(slot);
                    self.open_failed(job, ErrorKind::Timeout);
                    self.after_close();
                }
                Phase::Busy(busy) => {
                    // The response may be in, unread.
                    self.read(slot);
                    let still = matches!(
                        self.conns[slot].as_ref(),
                        Some(Conn { phase: Phase::Busy(b), .. }) if b.job.seq == busy.job.seq
                    );
                    if still {
                        let exchange = Exchange {
                            sent: busy.sent,
                            first_byte: None,
                            completed: deadline.max(busy.sent),
                            status: None,
                            bytes_in: 0,
                            error: Some(ErrorKind::Timeout),
                        };
                        self.rec.finished(busy.job.intended, &exchange);
                        self.close(slot);
                        self.after_close();
                    }
                }
                Phase::Idle => {}
            }
        }
    }

    /// Ends the worker: what is still in flight is cancelled, connections are closed.
    fn finish(&mut self) {
        let now = clock::now();
        for slot in 0..self.conns.len() {
            self.close(slot);
        }
        let left = self.rec.in_flight;
        if left > 0 {
            self.rec.cancelled(now, left);
        }
        self.rec
            .finish(now, clock::thread_cpu(), Duration::from_nanos(self.polled));
    }
}

fn token(slot: usize, gen: u32) -> EventData {
    EventData::new_u64(((gen as u64) << 32) | slot as u64)
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC now, in ns.
fn clock_offset() -> i128 {
    let real = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
    let mono = clock::now();
    real.tv_sec as i128 * 1_000_000_000 + real.tv_nsec as i128 - mono as i128
}

fn io_kind(e: Errno) -> ErrorKind {
    match e {
        Errno::TIMEDOUT => ErrorKind::Timeout,
        _ => ErrorKind::Reset,
    }
}
