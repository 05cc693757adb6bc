//! The bounded buffer of records that subscribers read from, by sequence number.
//!
//! The sampler appends every sample and event; each gets the next sequence number and is kept
//! serialized (one encoding, however many subscribers). The buffer holds the most recent records
//! up to a count and a byte budget (by default about an hour at 10 Hz). A reader asks for the
//! records after its cursor: it gets them, or, if some were evicted before it read them, a
//! [`Read::Gap`] naming exactly which, so that a subscriber that reconnects late knows what it
//! missed instead of silently skipping it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::watch;

use crate::protocol::{ProbeMessage, Record};

/// What a reader gets for its cursor.
#[derive(Debug, PartialEq)]
pub enum Read {
    /// Serialized `record` messages, in order, starting at the cursor.
    Records(Vec<Bytes>),
    /// Records `from..=to` were evicted before this reader got them.
    Gap { from: u64, to: u64 },
}

#[derive(Debug)]
struct Entry {
    mono_ns: u64,
    json: Bytes,
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
}

impl RecordBuffer {
    pub fn new(max_records: usize, max_bytes: usize) -> Self {
        RecordBuffer {
            entries: VecDeque::new(),
            first_seq: 0,
            bytes: 0,
            max_records: max_records.max(1),
            max_bytes: max_bytes.max(1),
        }
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
        let json = serde_json::to_vec(&ProbeMessage::Record { seq, record })
            .map(Bytes::from)
            // Our own types always serialize; an empty frame would be a bug, not data loss.
            .unwrap_or_default();
        self.bytes += json.len();
        self.entries.push_back(Entry { mono_ns, json });
        while self.entries.len() > self.max_records
            || (self.bytes > self.max_bytes && self.entries.len() > 1)
        {
            if let Some(old) = self.entries.pop_front() {
                self.bytes -= old.json.len();
                self.first_seq += 1;
            }
        }
        seq
    }

    /// Up to `max` records from sequence number `from` on.
    pub fn read(&self, from: u64, max: usize) -> Read {
        if from < self.first_seq {
            return Read::Gap {
                from,
                to: self.first_seq - 1,
            };
        }
        let skip = (from - self.first_seq) as usize;
        Read::Records(
            self.entries
                .iter()
                .skip(skip)
                .take(max)
                .map(|e| e.json.clone())
                .collect(),
        )
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

/// The buffer shared by the sampler (writer) and any number of readers, with a signal that
/// new records arrived.
#[derive(Debug, Clone)]
pub struct SharedBuffer {
    inner: Arc<Mutex<RecordBuffer>>,
    next: Arc<watch::Sender<u64>>,
}

impl SharedBuffer {
    pub fn new(max_records: usize, max_bytes: usize) -> Self {
        let (next, _) = watch::channel(0);
        SharedBuffer {
            inner: Arc::new(Mutex::new(RecordBuffer::new(max_records, max_bytes))),
            next: Arc::new(next),
        }
    }

    pub fn push(&self, mono_ns: u64, record: Record) -> u64 {
        let seq = self.with(|b| b.push(mono_ns, record));
        self.next.send_replace(seq + 1);
        seq
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

    fn seqs(read: Read) -> Vec<u64> {
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
        assert_eq!(seqs(b.read(0, 4)), vec![0, 1, 2, 3]);
        assert_eq!(seqs(b.read(4, 100)), vec![4, 5, 6, 7, 8, 9]);
        assert_eq!(seqs(b.read(10, 100)), Vec::<u64>::new());
    }

    #[test]
    fn evicted_records_are_reported_as_a_gap() {
        let mut b = RecordBuffer::new(5, 1 << 20);
        for i in 0..12 {
            b.push(i, event(i as i32));
        }
        assert_eq!(b.oldest_seq(), 7);
        assert_eq!(b.read(3, 100), Read::Gap { from: 3, to: 6 });
        assert_eq!(seqs(b.read(7, 100)), vec![7, 8, 9, 10, 11]);
    }

    #[test]
    fn the_byte_budget_bounds_memory() {
        let mut b = RecordBuffer::new(1_000_000, 2_000);
        for i in 0..1000 {
            b.push(i, event(i as i32));
        }
        assert!(b.bytes <= 2_000, "{} bytes held", b.bytes);
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
