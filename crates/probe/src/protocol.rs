//! The probe's wire protocol, version 1.
//!
//! # Frames
//!
//! Both directions send frames: a 4-byte big-endian length, then that many bytes of one JSON
//! object. Frames longer than the limit (default 1 MiB, [`MAX_FRAME`]) are refused and the
//! connection is closed; a frame that is not complete yet is normal and simply waited for (the
//! codec checks that a whole frame is there before parsing it). JSON keeps the protocol easy to
//! inspect and lets later versions add fields that older readers ignore.
//!
//! # Messages
//!
//! Every object has a `"type"`. A subscriber connects and speaks first:
//!
//! 1. **`hello`** (subscriber → probe): `{"type":"hello","version":1,"client":"loadgen 0.1",
//!    "token":"…","start":{"from":"live"}}`. `version` must equal the probe's; `token` is
//!    required when the probe has one (always when it listens beyond loopback) and is compared in
//!    constant time; `start` says where the stream begins: `live` (the next record), `oldest`
//!    (everything still buffered), `after` with `seq` (resume after the last record received),
//!    or `back` with `ns` (the records of the last `ns` nanoseconds: a pre-roll). `after` may name
//!    the probe's `instance` (from an earlier `welcome`): a probe that has restarted since, and
//!    so numbers its records afresh, starts with its oldest record instead.
//! 2. **`welcome`** (probe → subscriber): `{"type":"welcome","version":1,"host":{…},
//!    "oldest_seq":…,"next_seq":…,"instance":…}` with the host's facts ([`HostInfo`]) and the
//!    probe's instance (a random number drawn when it started); or **`refused`**
//!    `{"type":"refused","reason":"…"}`, after which the probe closes the connection (a wrong
//!    token is answered only after a delay that grows with repeated failures).
//! 3. Then the probe streams **`record`** frames, `{"type":"record","seq":N,"record":"sample",…}`
//!    (a [`Sample`]), `…,"record":"event",…}` (an [`Event`]) or `…,"record":"profile",…}` (a
//!    [`Profile`]: folded call stacks of about a second, from a probe started with `--profile`),
//!    with one sequence number for all, increasing by one. If records the subscriber asked for are no longer buffered, a
//!    **`gap`** `{"type":"gap","from_seq":A,"to_seq":B}` says so (records A to B inclusive are
//!    lost) before the stream goes on from B + 1. Nothing is dropped silently.
//! 4. At any time the subscriber may send **`ping`** `{"type":"ping","id":N}`; the probe answers
//!    **`pong`** `{"type":"pong","id":N,"mono_ns":…,"wall_ns":…}` with its clocks read on
//!    receipt, from which the subscriber estimates the clock offset and round trip (see
//!    `client.rs`). **`bye`** ends the session politely.
//!
//! Subscribers cannot change what the probe reads: the target selector is the probe's own
//! configuration.

use bytes::{Bytes, BytesMut};
use serde::{Deserialize, Serialize};
use thiserror::Error;
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec};

use crate::sample::{Event, HostInfo, Profile, Sample};

/// The protocol version this build speaks.
pub const VERSION: u32 = 1;

/// The largest frame accepted, in bytes (a sample of a tree of hundreds of processes fits).
pub const MAX_FRAME: usize = 1 << 20;

/// Where a subscription starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum Start {
    /// With the next record.
    Live,
    /// With the oldest record still buffered.
    Oldest,
    /// After record `seq` (to resume after a disconnection), if the probe is still the
    /// `instance` the records came from; a probe started since (a crash, an OOM kill, a
    /// restart) has numbered its records afresh, and starts with its oldest instead.
    After {
        seq: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instance: Option<u64>,
    },
    /// With the records of the last `ns` nanoseconds.
    Back { ns: u64 },
}

/// Subscriber → probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMessage {
    Hello {
        version: u32,
        client: String,
        #[serde(default)]
        token: Option<String>,
        start: Start,
    },
    Ping {
        id: u64,
    },
    Bye,
}

/// A sample, an event, or a profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record {
    Sample(Box<Sample>),
    Event(Event),
    Profile(Box<Profile>),
}

impl Record {
    /// When the record was taken, on the probe's monotonic clock.
    pub fn mono_ns(&self) -> u64 {
        match self {
            Record::Sample(s) => s.mono_ns,
            Record::Event(e) => e.mono_ns,
            Record::Profile(p) => p.mono_ns,
        }
    }

    /// When the record was taken, on the probe's wall clock.
    pub fn wall_ns(&self) -> u64 {
        match self {
            Record::Sample(s) => s.wall_ns,
            Record::Event(e) => e.wall_ns,
            Record::Profile(p) => p.wall_ns,
        }
    }
}

/// Probe → subscriber.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ProbeMessage {
    Welcome {
        version: u32,
        host: Box<HostInfo>,
        oldest_seq: u64,
        next_seq: u64,
        /// This run of the probe, a random number drawn at its start: records are numbered
        /// within one instance.
        #[serde(default)]
        instance: u64,
    },
    Refused {
        reason: String,
    },
    Record {
        seq: u64,
        #[serde(flatten)]
        record: Record,
    },
    Gap {
        from_seq: u64,
        to_seq: u64,
    },
    Pong {
        id: u64,
        mono_ns: u64,
        wall_ns: u64,
    },
}

/// Why a frame could not be read.
#[derive(Debug, Error)]
pub enum FrameError {
    #[error("connection: {0}")]
    Io(#[from] std::io::Error),
    #[error("malformed message: {0}")]
    Malformed(#[from] serde_json::Error),
}

/// Frames (length + JSON) of messages of type `In` read, `Out` written.
#[derive(Debug)]
pub struct Codec<In, Out> {
    frames: LengthDelimitedCodec,
    _types: std::marker::PhantomData<fn(Out) -> In>,
}

impl<In, Out> Codec<In, Out> {
    /// A codec refusing frames above `max_frame` bytes.
    pub fn new(max_frame: usize) -> Self {
        Codec {
            frames: LengthDelimitedCodec::builder()
                .length_field_length(4)
                .max_frame_length(max_frame)
                .new_codec(),
            _types: std::marker::PhantomData,
        }
    }
}

impl<In, Out> Default for Codec<In, Out> {
    fn default() -> Self {
        Self::new(MAX_FRAME)
    }
}

impl<In: serde::de::DeserializeOwned, Out> Decoder for Codec<In, Out> {
    type Item = In;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<In>, FrameError> {
        match self.frames.decode(src)? {
            Some(frame) => Ok(Some(serde_json::from_slice(&frame)?)),
            None => Ok(None),
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<In>, FrameError> {
        match self.frames.decode_eof(src)? {
            Some(frame) => Ok(Some(serde_json::from_slice(&frame)?)),
            None => Ok(None),
        }
    }
}

impl<In, Out: Serialize> Encoder<Out> for Codec<In, Out> {
    type Error = FrameError;

    fn encode(&mut self, item: Out, dst: &mut BytesMut) -> Result<(), FrameError> {
        let json = serde_json::to_vec(&item)?;
        self.frames.encode(Bytes::from(json), dst)?;
        Ok(())
    }
}

/// A message already serialized to JSON (a buffered record): framed as is.
#[derive(Debug, Clone)]
pub struct Encoded(pub Bytes);

impl<In, Out> Encoder<Encoded> for Codec<In, Out> {
    type Error = FrameError;

    fn encode(&mut self, json: Encoded, dst: &mut BytesMut) -> Result<(), FrameError> {
        self.frames.encode(json.0, dst)?;
        Ok(())
    }
}

/// The probe's side: reads client messages, writes probe messages.
pub type ProbeCodec = Codec<ClientMessage, ProbeMessage>;
/// The subscriber's side.
pub type ClientCodec = Codec<ProbeMessage, ClientMessage>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::EventKind;
    use proptest::prelude::*;

    fn frame(json: &[u8]) -> BytesMut {
        let mut out = BytesMut::new();
        out.extend_from_slice(&(json.len() as u32).to_be_bytes());
        out.extend_from_slice(json);
        out
    }

    #[test]
    fn messages_round_trip_through_frames() {
        let mut client = ClientCodec::default();
        let mut probe = ProbeCodec::default();
        let mut wire = BytesMut::new();
        let hello = ClientMessage::Hello {
            version: VERSION,
            client: "test".into(),
            token: Some("s3cret".into()),
            start: Start::After {
                seq: 41,
                instance: None,
            },
        };
        client.encode(hello.clone(), &mut wire).unwrap();
        assert_eq!(probe.decode(&mut wire).unwrap(), Some(hello));
        let event = ProbeMessage::Record {
            seq: 42,
            record: Record::Event(Event {
                mono_ns: 1,
                wall_ns: 2,
                kind: EventKind::TargetExited { pid: 7 },
            }),
        };
        probe.encode(event.clone(), &mut wire).unwrap();
        assert_eq!(client.decode(&mut wire).unwrap(), Some(event));
    }

    #[test]
    fn the_wire_format_is_as_documented() {
        let mut probe = ProbeCodec::default();
        let mut wire = frame(
            br#"{"type":"hello","version":1,"client":"x","start":{"from":"back","ns":5000000000}}"#,
        );
        assert_eq!(
            probe.decode(&mut wire).unwrap(),
            Some(ClientMessage::Hello {
                version: 1,
                client: "x".into(),
                token: None,
                start: Start::Back { ns: 5_000_000_000 }
            })
        );
        let mut out = BytesMut::new();
        probe
            .encode(
                ProbeMessage::Gap {
                    from_seq: 3,
                    to_seq: 9,
                },
                &mut out,
            )
            .unwrap();
        assert_eq!(&out[4..], br#"{"type":"gap","from_seq":3,"to_seq":9}"#);
    }

    #[test]
    fn an_incomplete_frame_is_waited_for() {
        let mut probe = ProbeCodec::default();
        let whole = frame(br#"{"type":"ping","id":3}"#);
        let mut partial = BytesMut::from(&whole[..7]);
        assert_eq!(probe.decode(&mut partial).unwrap(), None);
        partial.extend_from_slice(&whole[7..]);
        assert_eq!(
            probe.decode(&mut partial).unwrap(),
            Some(ClientMessage::Ping { id: 3 })
        );
    }

    #[test]
    fn oversized_truncated_and_malformed_frames_are_errors() {
        let mut probe = ProbeCodec::new(64);
        let mut big = BytesMut::new();
        big.extend_from_slice(&1_000_000u32.to_be_bytes());
        assert!(probe.decode(&mut big).is_err(), "oversized");
        let mut probe = ProbeCodec::default();
        let mut cut = BytesMut::from(&frame(br#"{"type":"bye"}"#)[..8]);
        assert!(
            probe.decode_eof(&mut cut).is_err(),
            "truncated at end of stream"
        );
        let mut probe = ProbeCodec::default();
        assert!(probe.decode(&mut frame(b"{not json")).is_err());
        let mut probe = ProbeCodec::default();
        assert!(probe
            .decode(&mut frame(br#"{"type":"launch_missiles"}"#))
            .is_err());
    }

    proptest! {
        /// Whatever bytes arrive, decoding returns a message, "need more", or an error: it never
        /// panics and never reads past a frame.
        #[test]
        fn arbitrary_bytes_never_crash_the_decoder(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..16)) {
            let mut probe = ProbeCodec::new(1024);
            let mut buf = BytesMut::new();
            for chunk in chunks {
                buf.extend_from_slice(&chunk);
                while let Ok(Some(_)) = probe.decode(&mut buf) {}
            }
        }

        /// Valid frames split at any point decode to the same messages.
        #[test]
        fn frames_split_anywhere_decode_the_same(ids in proptest::collection::vec(any::<u64>(), 1..8), cut in 0usize..200) {
            let mut wire = BytesMut::new();
            let mut client = ClientCodec::default();
            for &id in &ids {
                client.encode(ClientMessage::Ping { id }, &mut wire).unwrap();
            }
            let cut = cut.min(wire.len());
            let mut probe = ProbeCodec::default();
            let mut buf = BytesMut::from(&wire[..cut]);
            let mut got = Vec::new();
            while let Some(m) = probe.decode(&mut buf).unwrap() { got.push(m); }
            buf.extend_from_slice(&wire[cut..]);
            while let Some(m) = probe.decode(&mut buf).unwrap() { got.push(m); }
            let want: Vec<_> = ids.iter().map(|&id| ClientMessage::Ping { id }).collect();
            prop_assert_eq!(got, want);
        }
    }
}
