//! What a gun's pod and the runner say over the pod's one TLS connection: the pod's hello (its
//! token, index, node) answered by a welcome or a refusal, one JSON line each; then frames,
//! each `[tag u8][session u32][length u32][bytes]`, carrying the standard streams of every
//! `loadgen gun` session the runner opens, as SSH's channels carry them over one connection.

use serde::{Deserialize, Serialize};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt,
};

/// The protocol's version: a pod of another refuses to go on.
pub const VERSION: u32 = 1;
/// The longest frame either side takes.
pub const MAX_FRAME: u32 = 1 << 20;
/// The longest hello or welcome line.
const MAX_LINE: u64 = 16 << 10;

/// A pod's first line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    pub version: u32,
    /// This sitting's token, from the Job's Secret.
    pub token: order::Secret,
    /// `JOB_COMPLETION_INDEX`.
    pub index: u32,
    /// The pod's and its node's names (the downward API's), for the pages.
    pub pod: String,
    pub node: String,
}

/// The runner's answer to a hello.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case", deny_unknown_fields)]
pub enum Welcome {
    Welcome,
    Refused { why: String },
}

/// Runner → pod: start `loadgen gun` as this session.
pub const OPEN: u8 = 1;
/// Runner → pod: bytes for the session's standard input.
pub const INPUT: u8 = 2;
/// Runner → pod: the session's standard input is closed.
pub const INPUT_END: u8 = 3;
/// Runner → pod: end the session at once.
pub const KILL: u8 = 4;
/// Runner → pod: the sitting is over; end well (exit 0).
pub const BYE: u8 = 5;
/// Pod → runner: the session's standard output.
pub const OUTPUT: u8 = 10;
/// Pod → runner: the session's standard error.
pub const ERRORS: u8 = 11;
/// Pod → runner: the session ended, its exit code (`i32`, big-endian; absent: killed).
pub const EXIT: u8 = 12;

/// One frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub tag: u8,
    pub session: u32,
    pub bytes: Vec<u8>,
}

impl Frame {
    pub fn new(tag: u8, session: u32, bytes: Vec<u8>) -> Frame {
        Frame {
            tag,
            session,
            bytes,
        }
    }

    /// A session's exit, `None` when it was killed.
    pub fn exit(session: u32, code: Option<i32>) -> Frame {
        Frame::new(
            EXIT,
            session,
            code.map(|c| c.to_be_bytes().to_vec()).unwrap_or_default(),
        )
    }

    /// The exit code an `EXIT` frame carries.
    pub fn code(&self) -> Option<i32> {
        <[u8; 4]>::try_from(self.bytes.as_slice())
            .ok()
            .map(i32::from_be_bytes)
    }
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("a frame of {0} bytes is over the {MAX_FRAME} the protocol allows")]
    TooLong(u32),
    #[error("a line over {MAX_LINE} bytes, or none")]
    Line,
    #[error("not the protocol's JSON: {0}")]
    Json(#[from] serde_json::Error),
}

pub async fn write_frame<W: AsyncWrite + Unpin>(out: &mut W, frame: &Frame) -> std::io::Result<()> {
    let len = u32::try_from(frame.bytes.len()).unwrap_or(u32::MAX);
    let mut head = [0u8; 9];
    head[0] = frame.tag;
    head[1..5].copy_from_slice(&frame.session.to_be_bytes());
    head[5..9].copy_from_slice(&len.to_be_bytes());
    out.write_all(&head).await?;
    out.write_all(&frame.bytes).await?;
    out.flush().await
}

/// The next frame; `None` at a clean end of the stream.
pub async fn read_frame<R: AsyncRead + Unpin>(input: &mut R) -> Result<Option<Frame>, WireError> {
    let mut head = [0u8; 9];
    match input.read_exact(&mut head).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let [tag, s0, s1, s2, s3, l0, l1, l2, l3] = head;
    let len = u32::from_be_bytes([l0, l1, l2, l3]);
    if len > MAX_FRAME {
        return Err(WireError::TooLong(len));
    }
    let mut bytes = vec![0u8; len as usize];
    input.read_exact(&mut bytes).await?;
    Ok(Some(Frame::new(
        tag,
        u32::from_be_bytes([s0, s1, s2, s3]),
        bytes,
    )))
}

/// One JSON line of `T`, at most `MAX_LINE` bytes.
pub async fn read_line<T: serde::de::DeserializeOwned, R: AsyncBufRead + Unpin>(
    input: &mut R,
) -> Result<T, WireError> {
    let mut line = Vec::new();
    let n = input.take(MAX_LINE).read_until(b'\n', &mut line).await?;
    if n == 0 || line.last() != Some(&b'\n') {
        return Err(WireError::Line);
    }
    Ok(serde_json::from_slice(&line)?)
}

pub async fn write_line<T: Serialize, W: AsyncWrite + Unpin>(
    out: &mut W,
    value: &T,
) -> Result<(), WireError> {
    let mut line = serde_json::to_vec(value)?;
    line.push(b'\n');
    out.write_all(&line).await?;
    out.flush().await?;
    Ok(())
}

/// Whether two tokens are the same, in a time that does not say where they differ.
pub fn same_token(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip_and_an_oversized_one_is_refused() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        let sent = [
            Frame::new(OPEN, 7, vec![]),
            Frame::new(OUTPUT, 7, b"{\"x\":1}\n".to_vec()),
            Frame::exit(7, Some(3)),
            Frame::exit(8, None),
        ];
        for f in &sent {
            write_frame(&mut a, f).await.unwrap();
        }
        for f in &sent {
            assert_eq!(read_frame(&mut b).await.unwrap().as_ref(), Some(f));
        }
        assert_eq!(sent[2].code(), Some(3));
        assert_eq!(sent[3].code(), None);
        let mut head = vec![OUTPUT, 0, 0, 0, 1];
        head.extend_from_slice(&(MAX_FRAME + 1).to_be_bytes());
        a.write_all(&head).await.unwrap();
        assert!(matches!(
            read_frame(&mut b).await,
            Err(WireError::TooLong(_))
        ));
        drop(a);
        assert!(read_frame(&mut b).await.unwrap().is_none());
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same_token("abc", "abc"));
        assert!(!same_token("abc", "abd") && !same_token("abc", "ab"));
    }
}
