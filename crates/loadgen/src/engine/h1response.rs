//! Reading one HTTP/1.1 response as its bytes arrive, for the event loop's connections.
//!
//! The head is parsed by `httparse` (hyper's own parser); the body is framed by
//! `Content-Length`, chunked transfer coding, or the end of the connection, and counted, never
//! kept: a load generator needs the status, the size and the moment the response was complete.
//! Only an incomplete head is buffered, so an idle connection costs no buffer at all.

use store::model::ErrorKind;

/// A head larger than this is refused as a protocol error (hyper's default limit is ~400 KiB
/// of buffer; a response head of 64 KiB is already far outside what an API sends).
const MAX_HEAD: usize = 64 * 1024;
/// Headers parsed in one head; more is a protocol error.
const MAX_HEADERS: usize = 64;

/// What one read brought.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The response goes on.
    More,
    /// The response is complete. `close`: the connection cannot carry another request.
    Done { close: bool },
}

/// A complete head's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    /// Waiting for the head.
    Head,
    Length(u64),
    Chunked(Chunk),
    UntilClose,
}

/// Where a chunked body's decoder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    Size { value: u64, digits: u8 },
    Extension { value: u64 },
    SizeLf { value: u64 },
    Data(u64),
    DataCr,
    DataLf,
    TrailerStart,
    TrailerLine,
    FinalLf,
}

/// The reader for the response to one request.
#[derive(Debug)]
pub struct ResponseReader {
    /// Bytes of a head that did not arrive in one read.
    head: Vec<u8>,
    body: Body,
    /// The request was a HEAD: the response has no body whatever its headers say.
    head_request: bool,
    /// We asked the server to close (`Connection: close`).
    asked_close: bool,
    pub status: Option<u16>,
    close: bool,
    pub body_bytes: u64,
}

impl ResponseReader {
    pub fn new() -> Self {
        ResponseReader {
            head: Vec::new(),
            body: Body::Head,
            head_request: false,
            asked_close: false,
            status: None,
            close: false,
            body_bytes: 0,
        }
    }

    /// Starts on the response to a new request.
    pub fn reset(&mut self, head_request: bool, asked_close: bool) {
        self.head.clear();
        self.body = Body::Head;
        self.head_request = head_request;
        self.asked_close = asked_close;
        self.status = None;
        self.close = false;
        self.body_bytes = 0;
    }

    /// Whether any byte of the response has arrived.
    pub fn started(&self) -> bool {
        self.status.is_some() || !self.head.is_empty()
    }

    /// Takes the bytes of one read. Bytes past the end of the response (the server sent more
    /// than one response to one request) make the connection unusable.
    pub fn feed(&mut self, data: &[u8]) -> Result<Progress, ErrorKind> {
        let mut rest = data;
        while self.body == Body::Head {
            if self.head.is_empty() {
                match self.parse_head(rest)? {
                    Some(used) => rest = &rest[used..],
                    None => {
                        self.keep_head(rest)?;
                        return Ok(Progress::More);
                    }
                }
            } else {
                let before = self.head.len();
                self.keep_head(rest)?;
                let head = std::mem::take(&mut self.head);
                let parsed = self.parse_head(&head);
                match parsed? {
                    Some(used) => rest = &rest[used - before..],
                    None => {
                        self.head = head;
                        return Ok(Progress::More);
                    }
                }
            }
        }
        let done = self.body_bytes_in(&mut rest)?;
        if !done {
            return Ok(Progress::More);
        }
        Ok(Progress::Done {
            close: self.close || !rest.is_empty(),
        })
    }

    /// The connection ended (the peer closed it). Completes a body that runs until the close.
    pub fn eof(&mut self) -> Result<Progress, ErrorKind> {
        match self.body {
            Body::UntilClose => Ok(Progress::Done { close: true }),
            // Nothing of the response came: the server hung up on the request.
            Body::Head if self.head.is_empty() => Err(ErrorKind::Reset),
            Body::Head => Err(ErrorKind::Protocol),
            _ => Err(ErrorKind::BodyRead),
        }
    }

    fn keep_head(&mut self, data: &[u8]) -> Result<(), ErrorKind> {
        if self.head.len() + data.len() > MAX_HEAD {
            return Err(ErrorKind::Protocol);
        }
        self.head.extend_from_slice(data);
        Ok(())
    }

    /// Parses a head at the start of `data`: `Some(length)` once complete, and the body's
    /// framing decided; 1xx interim responses are skipped.
    fn parse_head(&mut self, data: &[u8]) -> Result<Option<usize>, ErrorKind> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        let used = match response.parse(data) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(_) => return Err(ErrorKind::Protocol),
        };
        let status = response.code.ok_or(ErrorKind::Protocol)?;
        if (100..200).contains(&status) {
            // 101 would switch protocols, which was never asked for.
            if status == 101 {
                return Err(ErrorKind::Protocol);
            }
            return Ok(Some(used));
        }
        let mut length: Option<u64> = None;
        let mut chunked = false;
        let mut coded = false;
        let mut keep_alive = false;
        let mut close = false;
        for h in response.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let text = std::str::from_utf8(h.value).map_err(|_| ErrorKind::Protocol)?;
                let n: u64 = text.trim().parse().map_err(|_| ErrorKind::Protocol)?;
                if length.is_some_and(|l| l != n) {
                    return Err(ErrorKind::Protocol);
                }
                length = Some(n);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                coded = true;
                // Chunked must be the last coding for the body to be delimited by it.
                chunked = h
                    .value
                    .rsplit(|&b| b == b',')
                    .next()
                    .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if h.name.eq_ignore_ascii_case("connection") {
                for token in h.value.split(|&b| b == b',') {
                    let token = token.trim_ascii();
                    close |= token.eq_ignore_ascii_case(b"close");
                    keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            }
        }
        let http10 = response.version == Some(0);
        self.status = Some(status);
        self.close = close || self.asked_close || (http10 && !keep_alive);
        self.body = if self.head_request || status == 204 || status == 304 {
            Body::Length(0)
        } else if coded && chunked {
            Body::Chunked(Chunk::Size {
                value: 0,
                digits: 0,
            })
        } else if coded {
            Body::UntilClose
        } else if let Some(n) = length {
            Body::Length(n)
        } else {
            Body::UntilClose
        };
        if self.body == Body::UntilClose {
            self.close = true;
        }
        Ok(Some(used))
    }

    /// Consumes body bytes from `rest`; true once the body is complete.
    fn body_bytes_in(&mut self, rest: &mut &[u8]) -> Result<bool, ErrorKind> {
        match &mut self.body {
            Body::Head => Ok(false),
            Body::UntilClose => {
                self.body_bytes += rest.len() as u64;
                *rest = &[];
                Ok(false)
            }
            Body::Length(left) => {
                let take = (*left).min(rest.len() as u64);
                *left -= take;
                self.body_bytes += take;
                *rest = &rest[take as usize..];
                Ok(*left == 0)
            }
            Body::Chunked(state) => {
                let (done, data) = dechunk(state, rest)?;
                self.body_bytes += data;
                Ok(done)
            }
        }
    }
}

impl Default for ResponseReader {
    fn default() -> Self {
        Self::new()
    }
}

/// Runs the chunked decoder over `rest`, leaving in it what follows the body. Returns whether
/// the body ended and how many data bytes went by.
fn dechunk(state: &mut Chunk, rest: &mut &[u8]) -> Result<(bool, u64), ErrorKind> {
    let mut data = 0u64;
    while !rest.is_empty() {
        if let Chunk::Data(left) = state {
            let take = (*left).min(rest.len() as u64);
            *left -= take;
            data += take;
            *rest = &rest[take as usize..];
            if *left == 0 {
                *state = Chunk::DataCr;
            }
            continue;
        }
        let b = rest[0];
        *rest = &rest[1..];
        *state = match (*state, b) {
            (Chunk::Size { value, digits }, b) if b.is_ascii_hexdigit() => {
                if digits >= 15 {
                    return Err(ErrorKind::Protocol);
                }
                let d = (b as char).to_digit(16).unwrap_or(0) as u64;
                Chunk::Size {
                    value: value * 16 + d,
                    digits: digits + 1,
                }
            }
            (Chunk::Size { value, digits }, b';' | b' ' | b'\t') if digits > 0 => {
                Chunk::Extension { value }
            }
            (Chunk::Size { value, digits }, b'\r') if digits > 0 => Chunk::SizeLf { value },
            (Chunk::Extension { value }, b'\r') => Chunk::SizeLf { value },
            (Chunk::Extension { value }, _) => Chunk::Extension { value },
            (Chunk::SizeLf { value: 0 }, b'\n') => Chunk::TrailerStart,
            (Chunk::SizeLf { value }, b'\n') => Chunk::Data(value),
            (Chunk::DataCr, b'\r') => Chunk::DataLf,
            (Chunk::DataLf, b'\n') => Chunk::Size {
                value: 0,
                digits: 0,
            },
            (Chunk::TrailerStart, b'\r') => Chunk::FinalLf,
            (Chunk::TrailerStart | Chunk::TrailerLine, b'\n') => Chunk::TrailerStart,
            (Chunk::TrailerStart | Chunk::TrailerLine, _) => Chunk::TrailerLine,
            (Chunk::FinalLf, b'\n') => return Ok((true, data)),
            _ => return Err(ErrorKind::Protocol),
        };
    }
    Ok((false, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `wire` in pieces of `step` bytes; returns the outcome and the body size.
    fn read_in_steps(wire: &[u8], step: usize) -> (Result<Progress, ErrorKind>, u64) {
        let mut r = ResponseReader::new();
        r.reset(false, false);
        let mut last = Ok(Progress::More);
        for piece in wire.chunks(step) {
            last = r.feed(piece);
            if last != Ok(Progress::More) {
                break;
            }
        }
        (last, r.body_bytes)
    }

    #[test]
    fn content_length_bodies_end_at_their_length_in_any_split() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\nServer: x\r\n\r\nhello world";
        for step in [1, 2, 7, 30, wire.len()] {
            let (out, body) = read_in_steps(wire, step);
            assert_eq!(out, Ok(Progress::Done { close: false }), "step {step}");
            assert_eq!(body, 11);
        }
    }

    #[test]
    fn chunked_bodies_count_data_only_with_extensions_and_trailers() {
        let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n";
        for step in [1, 3, 16, wire.len()] {
            let (out, body) = read_in_steps(wire, step);
            assert_eq!(out, Ok(Progress::Done { close: false }), "step {step}");
            assert_eq!(body, 15);
        }
        let (out, _) = read_in_steps(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            4,
        );
        assert_eq!(out, Err(ErrorKind::Protocol));
    }

    #[test]
    fn connection_close_http10_and_unframed_bodies_end_the_connection() {
        let (out, _) = read_in_steps(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            64,
        );
        assert_eq!(out, Ok(Progress::Done { close: true }));
        let (out, _) = read_in_steps(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 64);
        assert_eq!(out, Ok(Progress::Done { close: true }));
        let (out, _) = read_in_steps(
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
            64,
        );
        assert_eq!(out, Ok(Progress::Done { close: false }));
        let mut r = ResponseReader::new();
        assert_eq!(r.feed(b"HTTP/1.1 200 OK\r\n\r\nabc"), Ok(Progress::More));
        assert_eq!(r.eof(), Ok(Progress::Done { close: true }));
        assert_eq!(r.body_bytes, 3);
    }

    #[test]
    fn heads_without_bodies_interim_responses_and_extra_bytes() {
        let mut r = ResponseReader::new();
        r.reset(true, false);
        assert_eq!(
            r.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n"),
            Ok(Progress::Done { close: false })
        );
        let (out, _) = read_in_steps(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
            5,
        );
        assert_eq!(out, Ok(Progress::Done { close: false }));
        // A second response nobody asked for: the connection is not reused.
        let (out, _) = read_in_steps(
            b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
            100,
        );
        assert_eq!(out, Ok(Progress::Done { close: true }));
    }

    #[test]
    fn broken_responses_are_named() {
        let (out, _) = read_in_steps(b"SMTP ready\r\n\r\n", 100);
        assert_eq!(out, Err(ErrorKind::Protocol));
        let (out, _) = read_in_steps(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", 100);
        assert_eq!(out, Err(ErrorKind::Protocol));
        let mut r = ResponseReader::new();
        assert_eq!(r.eof(), Err(ErrorKind::Reset));
        let _ = r.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
        assert_eq!(r.eof(), Err(ErrorKind::BodyRead));
        let mut r = ResponseReader::new();
        let huge = vec![b'a'; MAX_HEAD + 1];
        assert_eq!(r.feed(b"HTTP/1.1 200 OK\r\nX: "), Ok(Progress::More));
        assert_eq!(r.feed(&huge), Err(ErrorKind::Protocol));
    }
}
