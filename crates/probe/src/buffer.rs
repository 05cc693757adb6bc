//! The bounded buffer of records that subscribers read from, by sequence number.
//!
//! The sampler appends every sample and event; each gets the next sequence number. Records are
//! kept as they are, and serialized for the network on first demand, once however many
//! subscribers read them (a local reader such as `probe record` never pays for JSON). The buffer
//! holds the most recent records up to a count and a byte budget (by default about an hour at
//! 10 Hz). A reader asks for the records after its cursor: it gets them, or, if some were
//! evicted before it read them, a [`Read::Gap`] naming exactly which, so that a subscriber that
//! reconnects late knows what it missed instead of silently skipping it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::watch;

use crate::protocol::{ProbeMessage, Record};

/// What a reader gets for its cursor.
#[derive(Debug, PartialEq)]
pub enum Read<T> {
    /// Records in order, starting at the cursor.
    Records(Vec<T>),
    /// Records `from..=to` were evicted before this reader got them.
    Gap { from: u64, to: u64 },
}

#[derive(Debug)]
struct Entry {
    mono_ns: u64,
    record: Arc<Record>,
    /// The `record` message as JSON, once a subscriber has asked for it.
    json: Option<Bytes>,
    /// What the entry is counted as against the byte budget.
    bytes: usize,
}

/// A random, non-zero instance number (zero is what a probe that predates instances says).
fn random_instance() -> u64 {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 8];
    let drawn = ring::rand::SystemRandom::new().fill(&mut bytes).is_ok();
    let n = u64::from_le_bytes(bytes);
    if drawn && n != 0 {
        n
    } else {
        // No randomness: the clock still tells two starts apart.
        crate::clock::wall_ns() | 1
    }
}

/// Memory a record takes, roughly: its rows and strings, or its JSON once encoded.
fn footprint(record: &Record) -> usize {
    use crate::sample::ProcessSample;
    match record {
        Record::Sample(s) => {
            std::mem::size_of::<crate::sample::Sample>()
                + (s.processes.len() + 1) * (std::mem::size_of::<ProcessSample>() + 64)
        }
        Record::Event(_) => 256,
        Record::Profile(p) => {
            std::mem::size_of::<crate::sample::Profile>()
                + p.frames.iter().map(|f| f.len() + 24).sum::<usize>()
                + p.stacks
                    .iter()
                    .map(|(s, _)| s.len() * 4 + 48)
                    .sum::<usize>()
        }
    }
}

/// The records themselves; see [`SharedBuffer`] for the thread-safe handle.
#[derive(Debug)]
pub struct RecordBuffer {
    entries: VecDeque<Entry>,
    /// Sequence number of `entries[0]`.
    first_seq: u64,
    bytes: usize,
    max_records: usize,
    max_bytes: usize,
    /// Drawn at random when the buffer is made: sequence numbers count within one instance.
    instance: u64,
}

impl RecordBuffer {
    pub fn new(max_records: usize, max_bytes: usize) -> Self {
        RecordBuffer {
            entries: VecDeque::new(),
            first_seq: 0,
            bytes: 0,
            max_records: max_records.max(1),
            max_bytes: max_bytes.max(1),
            instance: random_instance(),
        }
    }

    /// This buffer's instance: a subscriber that resumes after a sequence number of another
    /// instance (the probe restarted) must start afresh.
    pub fn instance(&self) -> u64 {
        self.instance
    }

    /// The sequence number the next record will get.
    pub fn next_seq(&self) -> u64 {
        self.first_seq + self.entries.len() as u64
    }

    /// The oldest sequence number still held (equal to `next_seq` when empty).
    pub fn oldest_seq(&self) -> u64 {
        self.first_seq
    }

    /// Appends a record taken at `mono_ns`; returns its sequence number.
    pub fn push(&mut self, mono_ns: u64, record: Record) -> u64 {
        let seq = self.next_seq();
        let bytes = footprint(&record);
        self.bytes += bytes;
        self.entries.push_back(Entry {
            mono_ns,
            record: Arc::new(record),
            json: None,
            bytes,
        });
        self.evict();
        seq
    }

    fn evict(&mut self) {
        while self.entries.len() > self.max_records
            || (self.bytes > self.max_bytes && self.entries.len() > 1)
        {
            if let Some(old) = self.entries.pop_front() {
                self.bytes -= old.bytes;
                self.first_seq += 1;
            }
        }
    }

    /// The gap before `from`, if records from there on were evicted.
    fn gap(&self, from: u64) -> Option<(u64, u64)> {
        (from < self.first_seq).then(|| (from, self.first_seq - 1))
    }

    /// Up to `max` records from sequence number `from` on, with their sequence numbers.
    pub fn read(&self, from: u64, max: usize) -> Read<(u64, Arc<Record>)> {
        if let Some((from, to)) = self.gap(from) {
            return Read::Gap { from, to };
        }
        let skip = (from - self.first_seq) as usize;
        Read::Records(
            self.entries
                .iter()
                .skip(skip)
                .take(max)
                .enumerate()
                .map(|(i, e)| (from + i as u64, e.record.clone()))
                .collect(),
        )
    }

    /// Up to `max` records from `from` on as serialized `record` messages, encoding each the
    /// first time it is asked for. A record whose message would exceed `max_frame` bytes (a
    /// profile of names a target chose, each character escaped) goes as a gap of that one
    /// record: sent as it is, it would end every connection at the same place.
    pub fn read_encoded(&mut self, from: u64, max: usize, max_frame: usize) -> Read<Bytes> {
        if let Some((from, to)) = self.gap(from) {
            return Read::Gap { from, to };
        }
        let skip = (from - self.first_seq) as usize;
        let mut out = Vec::new();
        let mut grown = 0;
        for (i, entry) in self.entries.iter_mut().skip(skip).take(max).enumerate() {
            let json = entry.json.get_or_insert_with(|| {
                let seq = from + i as u64;
                let message = ProbeMessage::Record {
                    seq,
                    record: (*entry.record).clone(),
                };
                // Our own types always serialize; an empty frame would be a bug, not data loss.
                let mut json = serde_json::to_vec(&message).unwrap_or_default();
                if json.len() > max_frame {
                    tracing::warn!(
                        seq,
                        bytes = json.len(),
                        "a record too large for one frame is sent as a gap"
                    );
                    let gap = ProbeMessage::Gap {
                        from_seq: seq,
                        to_seq: seq,
                    };
                    json = serde_json::to_vec(&gap).unwrap_or_default();
                }
                let json = Bytes::from(json);
                grown += json.len();
                entry.bytes += json.len();
                json
            });
            out.push(json.clone());
        }
        self.bytes += grown;
        Read::Records(out)
    }

    /// The first sequence number of a record taken at or after `mono_ns`.
    pub fn seq_since(&self, mono_ns: u64) -> u64 {
        let index = self.entries.partition_point(|e| e.mono_ns < mono_ns);
        self.first_seq + index as u64
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Readers are woken at most this often by default: at 100 Hz, a wake-up per sample for every
/// reader would cost more than the sampling.
pub const WAKE_GAP_NS: u64 = 50_000_000;

/// The buffer shared by the sampler (writer) and any number of readers, with a signal that
/// new records arrived.
#[derive(Debug, Clone)]
pub struct SharedBuffer {
    inner: Arc<Mutex<RecordBuffer>>,
    next: Arc<watch::Sender<u64>>,
    last_wake: Arc<std::sync::atomic::AtomicU64>,
    wake_gap_ns: Arc<std::sync::atomic::AtomicU64>,
}

impl SharedBuffer {
    pub fn new(max_records: usize, max_bytes: usize) -> Self {
        let (next, _) = watch::channel(0);
        SharedBuffer {
            inner: Arc::new(Mutex::new(RecordBuffer::new(max_records, max_bytes))),
            next: Arc::new(next),
            last_wake: Arc::default(),
            wake_gap_ns: Arc::new(WAKE_GAP_NS.into()),
        }
    }

    /// Wakes readers at most every `gap` instead of [`WAKE_GAP_NS`] (a file writer, which no
    /// one waits for, needs no more than a few wake-ups a second).
    pub fn set_wake_gap(&self, gap: std::time::Duration) {
        let gap = gap.as_nanos().min(u64::MAX as u128) as u64;
        self.wake_gap_ns
            .store(gap, std::sync::atomic::Ordering::Relaxed);
    }

    /// Appends records taken at the given times. Readers are woken if the last wake-up is at
    /// least the wake gap old (or `wake` is set: an event, or the end of sampling).
    pub fn push_all(&self, records: impl IntoIterator<Item = (u64, Record)>, wake: bool) {
        use std::sync::atomic::Ordering;
        let (next, last_mono) = self.with(|b| {
            let mut last = 0;
            for (mono_ns, record) in records {
                b.push(mono_ns, record);
                last = mono_ns;
            }
            (b.next_seq(), last)
        });
        let previous = self.last_wake.load(Ordering::Relaxed);
        let gap = self.wake_gap_ns.load(Ordering::Relaxed);
        if wake || last_mono.saturating_sub(previous) >= gap {
            self.last_wake.store(last_mono, Ordering::Relaxed);
            self.next.send_replace(next);
        }
    }

    /// Wakes readers now (when sampling stops, so that they see the last records).
    pub fn wake(&self) {
        let next = self.with(|b| b.next_seq());
        self.next.send_replace(next);
    }

    /// Runs `f` on the buffer (a poisoned lock still holds valid records).
    pub fn with<T>(&self, f: impl FnOnce(&mut RecordBuffer) -> T) -> T {
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut guard)
    }

    /// A receiver that changes whenever records are appended.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.next.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{Event, EventKind};

    fn event(pid: i32) -> Record {
        Record::Event(Event {
            mono_ns: pid as u64,
            wall_ns: 0,
            kind: EventKind::ProcessExited { pid },
        })
    }

    fn seqs(read: Read<Bytes>) -> Vec<u64> {
        match read {
            Read::Records(r) => r
                .iter()
                .map(|json| {
                    let m: ProbeMessage = serde_json::from_slice(json).unwrap();
                    match m {
                        ProbeMessage::Record { seq, .. } => seq,
                        other => panic!("{other:?}"),
                    }
                })
                .collect(),
            Read::Gap { from, to } => panic!("gap {from}..={to}"),
        }
    }

    #[test]
    fn readers_resume_exactly_where_they_left_off() {
        let mut b = RecordBuffer::new(100, 1 << 20);
        for i in 0..10 {
            assert_eq!(b.push(i, event(i as i32)), i);
        }
        assert_eq!(seqs(b.read_encoded(0, 4, usize::MAX)), vec![0, 1, 2, 3]);
        assert_eq!(
            seqs(b.read_encoded(4, 100, usize::MAX)),
            vec![4, 5, 6, 7, 8, 9]
        );
        assert_eq!(seqs(b.read_encoded(10, 100, usize::MAX)), Vec::<u64>::new());
        // Local readers get the records themselves, with the same numbers.
        match b.read(3, 2) {
            Read::Records(r) => assert_eq!(
                r.iter().map(|(seq, _)| *seq).collect::<Vec<_>>(),
                vec![3, 4]
            ),
            Read::Gap { .. } => panic!("gap"),
        }
    }

    #[test]
    fn a_record_too_large_for_a_frame_goes_as_a_gap_of_itself() {
        let mut b = RecordBuffer::new(100, 1 << 20);
        for i in 0..3 {
            b.push(i, event(i as i32));
        }
        let small = match b.read_encoded(0, 1, usize::MAX) {
            Read::Records(r) => r[0].len(),
            Read::Gap { .. } => panic!("gap"),
        };
        b.push(3, event(i32::MAX));
        // Record 3 is longer than record 0 (its PID has more digits): over the limit.
        match b.read_encoded(1, 100, small) {
            Read::Records(r) => {
                let messages: Vec<ProbeMessage> = r
                    .iter()
                    .map(|json| serde_json::from_slice(json).unwrap())
                    .collect();
                assert!(matches!(messages[0], ProbeMessage::Record { seq: 1, .. }));
                assert!(matches!(messages[1], ProbeMessage::Record { seq: 2, .. }));
                assert!(
                    matches!(
                        messages[2],
                        ProbeMessage::Gap {
                            from_seq: 3,
                            to_seq: 3
                        }
                    ),
                    "{:?}",
                    messages[2]
                );
            }
            Read::Gap { .. } => panic!("gap"),
        }
    }

    #[test]
    fn evicted_records_are_reported_as_a_gap() {
        let mut b = RecordBuffer::new(5, 1 << 20);
        for i in 0..12 {
            b.push(i, event(i as i32));
        }
        assert_eq!(b.oldest_seq(), 7);
        assert_eq!(
            b.read_encoded(3, 100, usize::MAX),
            Read::Gap { from: 3, to: 6 }
        );
        assert_eq!(
            seqs(b.read_encoded(7, 100, usize::MAX)),
            vec![7, 8, 9, 10, 11]
        );
    }

    #[test]
    fn the_byte_budget_bounds_memory() {
        let mut b = RecordBuffer::new(1_000_000, 20_000);
        for i in 0..1000 {
            b.push(i, event(i as i32));
            b.read_encoded(i, 1, usize::MAX);
            b.evict();
        }
        assert!(b.bytes <= 20_000, "{} bytes held", b.bytes);
        assert_eq!(b.next_seq(), 1000);
        assert!(b.len() > 10);
    }

    #[test]
    fn a_pre_roll_starts_at_the_first_record_of_the_window() {
        let mut b = RecordBuffer::new(100, 1 << 20);
        for i in 0..10 {
            b.push(i * 100, event(i as i32));
        }
        assert_eq!(b.seq_since(450), 5);
        assert_eq!(b.seq_since(0), 0);
        assert_eq!(b.seq_since(10_000), 10);
    }
}
