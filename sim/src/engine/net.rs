//! Addresses of the machines and length-prefixed frames, carried by the transport ([`crate::engine::wire`]).
//!
//! A frame is a 4-byte big-endian length, then that many bytes of payload. The client's first
//! frame on a connection is its `Request`; everything after, server to client, is `Frame`s. The
//! load balancer forwards frames as raw bytes without decoding them (it only peeks at a
//! request's session and a response's head).
//!
//! Inside the simulation a message is not serialized: [`encode`] files a copy of it in this run's
//! [`Wire`] and the frame carries only its 8-byte handle; [`decode`] hands back a copy of the
//! message behind a handle. Turning every frame into JSON and back was about a tenth of a
//! `chatty-tool` run. The transport ([`crate::engine::wire`]) draws one latency per write whatever
//! its size and hands a write to its reader whole, so everything that arrived together is read
//! and forwarded together. JSON stays for trace files.

use crate::engine::wire::Stream;
use std::any::Any;
use std::cell::RefCell;
use std::io;

/// The first whole frame of a run of frames (as [`FrameReader::next_frames`] returns), if it is
/// all there.
pub fn first_frame(frames: &[u8]) -> Option<&[u8]> {
    let len = u32::from_be_bytes(frames.get(..HEADER)?.try_into().ok()?) as usize;
    frames.get(..HEADER + len)
}

/// Bytes of the length prefix.
const HEADER: usize = 4;
/// A frame longer than this is a bug on the sending side, not something to buffer.
const MAX_FRAME: usize = 1 << 24;

/// The messages put on the wire during the current run, by handle. A run happens on one thread
/// (madsim runs every task of a runtime there), so the wire is per thread, and the runner clears
/// it when a run starts and ends ([`Wire::clear`]). A message stays filed until then: a frame may
/// be read twice (the load balancer peeks at what it forwards), and frames lost with a killed
/// connection are never read at all; the step budget bounds how many a run sends.
pub struct Wire;

thread_local! {
    static WIRE: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

impl Wire {
    /// Forgets every message filed on this thread: the start and end of a run.
    pub fn clear() {
        WIRE.with_borrow_mut(|wire| *wire = Vec::new());
    }

    /// Files `message` and returns its handle.
    fn file(message: Box<dyn Any>) -> u64 {
        WIRE.with_borrow_mut(|wire| {
            wire.push(message);
            wire.len() as u64 - 1
        })
    }

    /// A copy of the message filed under `handle`, if it is a `T`.
    fn copy<T: Any + Clone>(handle: u64) -> Option<T> {
        let index = usize::try_from(handle).ok()?;
        WIRE.with_borrow(|wire| wire.get(index)?.downcast_ref::<T>().cloned())
    }
}

/// Bytes of a frame's payload: a handle.
const HANDLE: usize = 8;

/// Appends one frame (prefix and handle) for a copy of `message` to `out`.
pub fn encode<T: Any + Clone>(message: &T, out: &mut Vec<u8>) {
    let handle = Wire::file(Box::new(message.clone()));
    out.extend_from_slice(&(HANDLE as u32).to_be_bytes());
    out.extend_from_slice(&handle.to_be_bytes());
}

/// Decodes a whole frame as returned by [`FrameReader::next`] (prefix included): a copy of the
/// message it carries. A frame that is no handle of this run's wire, or a handle of a message of
/// another type, is `InvalidData`.
pub fn decode<T: Any + Clone>(frame: &[u8]) -> io::Result<T> {
    let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let payload = frame.get(HEADER..).ok_or_else(|| invalid("a frame shorter than its length prefix"))?;
    let handle = u64::from_be_bytes(payload.try_into().map_err(|_| invalid("a frame that is no handle"))?);
    Wire::copy(handle).ok_or_else(|| invalid("a handle of no message of this type on this run's wire"))
}

/// Whether the message behind a whole frame is a `T` for which `test` holds, without copying it.
pub fn peek<T: Any>(frame: &[u8], test: impl FnOnce(&T) -> bool) -> bool {
    let Some(payload) = frame.get(HEADER..) else { return false };
    let Ok(bytes) = <[u8; HANDLE]>::try_from(payload) else { return false };
    let Ok(index) = usize::try_from(u64::from_be_bytes(bytes)) else { return false };
    WIRE.with_borrow(|wire| wire.get(index).and_then(|m| m.downcast_ref::<T>()).is_some_and(test))
}

/// The last whole frame of a run of frames.
pub fn last_frame(frames: &[u8]) -> Option<&[u8]> {
    let mut rest = frames;
    let mut last = None;
    while let Some(frame) = first_frame(rest) {
        last = Some(frame);
        rest = &rest[frame.len()..];
    }
    last
}

/// Sends already-encoded frames as one write.
pub(crate) async fn send(stream: &mut Stream, bytes: Vec<u8>) -> io::Result<()> {
    stream.send(bytes).await
}

/// Encodes `message` and sends it as one write.
pub(crate) async fn send_message<T: Any + Clone>(stream: &mut Stream, message: &T) -> io::Result<()> {
    let mut bytes = Vec::with_capacity(HEADER + HANDLE);
    encode(message, &mut bytes);
    send(stream, bytes).await
}

/// Splits the writes that arrive on a stream into frames. Cancel-safe: dropping a pending
/// [`FrameReader::next`] (as `select!` does) loses nothing, because a write leaves the stream
/// only in the poll that hands it to the buffer.
#[derive(Debug, Default)]
pub struct FrameReader {
    buf: Vec<u8>,
    /// Start of the unread bytes in `buf`.
    start: usize,
    /// Length of the frame last returned, consumed at the next call.
    returned: usize,
}

impl FrameReader {
    pub fn new() -> Self {
        FrameReader::default()
    }

    /// The next whole frame (length prefix included), or `None` at end of stream. An end of
    /// stream in the middle of a frame is an `UnexpectedEof` error.
    pub async fn next(&mut self, stream: &mut Stream) -> io::Result<Option<&[u8]>> {
        self.start += std::mem::take(&mut self.returned);
        loop {
            if let Some(len) = self.whole_frame()? {
                self.returned = len;
                return Ok(Some(&self.buf[self.start..self.start + len]));
            }
            let Some(write) = stream.recv().await else {
                return if self.start == self.buf.len() {
                    Ok(None)
                } else {
                    Err(io::Error::new(io::ErrorKind::UnexpectedEof, "stream ended inside a frame"))
                };
            };
            self.append(write);
        }
    }

    /// Takes a write in: as the buffer when everything before it was read (no copy), else
    /// after the unread bytes.
    fn append(&mut self, write: Vec<u8>) {
        if self.start == self.buf.len() {
            self.buf = write;
        } else {
            if self.start > 0 {
                self.buf.drain(..self.start);
            }
            self.buf.extend_from_slice(&write);
        }
        self.start = 0;
    }

    /// Every whole frame that has arrived, as one run of bytes, and how many frames it holds:
    /// what a proxy forwards in one write. `None` at end of stream.
    pub async fn next_frames(&mut self, stream: &mut Stream) -> io::Result<Option<(&[u8], usize)>> {
        let Some(first) = self.next(stream).await?.map(<[u8]>::len) else { return Ok(None) };
        let (mut len, mut count) = (first, 1);
        while let Some(more) = self.frame_at(self.start + len)? {
            len += more;
            count += 1;
        }
        self.returned = len;
        Ok(Some((&self.buf[self.start..self.start + len], count)))
    }

    /// The length of the whole frame at the front of the buffer, if it has fully arrived.
    fn whole_frame(&self) -> io::Result<Option<usize>> {
        self.frame_at(self.start)
    }

    /// The length of the whole frame starting at `at`, if it has fully arrived.
    fn frame_at(&self, at: usize) -> io::Result<Option<usize>> {
        let unread = &self.buf[at..];
        let Some(prefix) = unread.get(..HEADER) else { return Ok(None) };
        let len = u32::from_be_bytes(prefix.try_into().expect("a 4-byte slice")) as usize;
        if len > MAX_FRAME {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a {len}-byte frame")));
        }
        Ok((unread.len() >= HEADER + len).then_some(HEADER + len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::addr::{replica_addr, CLIENT_IP};
    use mcpsim_model::http::{Frame, Request, ResponseHead};
    use mcpsim_model::ids::RequestId;

    /// Inside a simulation: a stream on which `data` arrives in writes of `piece` bytes, then
    /// the end.
    async fn trickle(data: &[u8], piece: usize) -> Stream {
        let net = crate::engine::wire::Net::new(1, std::time::Duration::ZERO, std::time::Duration::ZERO);
        let listener = net.bind(replica_addr(0));
        let mut writer = net.connect(CLIENT_IP, replica_addr(0)).expect("the listener is bound");
        let (reader, _) = listener.accept().await;
        for chunk in data.chunks(piece) {
            writer.send(chunk.to_vec()).await.expect("the reader is there");
        }
        reader
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        madsim::runtime::Runtime::new().block_on(f)
    }

    #[test]
    fn frames_survive_any_split_of_the_byte_stream() {
        let request = Request::initialize(RequestId(1), "app");
        let frames = vec![Frame::Head(ResponseHead::event_stream()), Frame::Comment, Frame::End];
        let mut bytes = Vec::new();
        encode(&request, &mut bytes);
        for f in &frames {
            encode(f, &mut bytes);
        }
        for piece in [1, 3, 7, 1000] {
            let (got_request, got_frames) = block_on(async {
                let mut stream = trickle(&bytes, piece).await;
                let mut reader = FrameReader::new();
                let first = reader.next(&mut stream).await.unwrap().unwrap();
                let got_request: Request = decode(first).unwrap();
                let mut got = Vec::new();
                while let Some(frame) = reader.next(&mut stream).await.unwrap() {
                    got.push(decode::<Frame>(frame).unwrap());
                }
                (got_request, got)
            });
            assert_eq!(got_request, request, "piece {piece}");
            assert_eq!(got_frames, frames, "piece {piece}");
        }
    }

    #[test]
    fn frames_that_arrived_together_come_out_together() {
        let mut bytes = Vec::new();
        for f in [Frame::Comment, Frame::Comment, Frame::End] {
            encode(&f, &mut bytes);
        }
        let whole = bytes.len();
        bytes.extend_from_slice(&[0, 0]);
        let (len, count, then) = block_on(async {
            let mut stream = trickle(&bytes, 1 << 20).await;
            let mut reader = FrameReader::new();
            let (run, count) = reader.next_frames(&mut stream).await.unwrap().unwrap();
            let len = run.len();
            (len, count, reader.next_frames(&mut stream).await.map(|r| r.map(|(_, n)| n)))
        });
        assert_eq!((len, count), (whole, 3));
        assert_eq!(then.unwrap_err().kind(), io::ErrorKind::UnexpectedEof, "the 2 stray bytes are half a prefix");
    }

    #[test]
    fn a_frame_decodes_only_as_its_own_type_and_only_during_its_run() {
        Wire::clear();
        let mut bytes = Vec::new();
        encode(&Frame::Comment, &mut bytes);
        assert_eq!(decode::<Frame>(&bytes).unwrap(), Frame::Comment);
        assert_eq!(decode::<Frame>(&bytes).unwrap(), Frame::Comment, "a frame may be read twice");
        assert_eq!(decode::<Request>(&bytes).unwrap_err().kind(), io::ErrorKind::InvalidData);
        assert_eq!(decode::<Frame>(&bytes[..HEADER + 3]).unwrap_err().kind(), io::ErrorKind::InvalidData);
        Wire::clear();
        assert_eq!(decode::<Frame>(&bytes).unwrap_err().kind(), io::ErrorKind::InvalidData, "a past run's handle");
    }

    #[test]
    fn a_stream_cut_inside_a_frame_is_an_error_not_an_end() {
        let mut bytes = Vec::new();
        encode(&Frame::End, &mut bytes);
        bytes.pop();
        let err = block_on(async {
            let mut stream = trickle(&bytes, 2).await;
            FrameReader::new().next(&mut stream).await.map(|f| f.is_some())
        })
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }
}
