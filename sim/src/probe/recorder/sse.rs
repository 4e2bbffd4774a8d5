//! An incremental `text/event-stream` parser that keeps what the probe needs and the usual
//! parsers drop: comment lines (`: keepalive`), which is how a keep-alive interval is measured,
//! and whether an event carried a `data:` field at all (a priming event has an id and an empty
//! `data`). `sse-stream` 0.2.6 only logs comment lines and drops them, hence this one.

/// One item of an event stream, in arrival order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SseItem {
    /// A dispatched event (a blank line ended it).
    Event(RawEvent),
    /// A comment line, without its colon.
    Comment(String),
}

/// An event as it was on the wire.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawEvent {
    /// The `id:` field.
    pub id: Option<String>,
    /// The `event:` field.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`; `None` when the event had no `data` field.
    pub data: Option<String>,
    /// The `retry:` field, in ms.
    pub retry_ms: Option<u64>,
    /// Its fields passed [`crate::probe::limits::MAX_EVENT_BYTES`]: the rest was dropped.
    pub oversize: bool,
}

impl RawEvent {
    /// An id and an empty (or no) data field: only a cursor.
    pub fn is_priming(&self) -> bool {
        self.id.is_some() && self.data.as_deref().is_none_or(str::is_empty)
    }
}

/// Bytes in, items out. Lines longer than [`SseParser::MAX_LINE`] are cut there (a server
/// cannot make the probe buffer without bound).
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    pending: RawEvent,
    /// The event has at least one field.
    started: bool,
    last_was_cr: bool,
    /// Bytes of the pending event's fields so far.
    event_bytes: usize,
    /// The current line passed `MAX_LINE` and was cut.
    line_cut: bool,
}

impl SseParser {
    /// The longest line kept.
    pub const MAX_LINE: usize = 1 << 20;

    /// Feeds bytes; returns the items they completed.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseItem> {
        let mut out = Vec::new();
        for &b in bytes {
            if b == b'\n' && self.last_was_cr {
                self.last_was_cr = false;
                continue;
            }
            self.last_was_cr = b == b'\r';
            if b == b'\n' || b == b'\r' {
                let line = std::mem::take(&mut self.line);
                if std::mem::take(&mut self.line_cut) {
                    self.pending.oversize = true;
                }
                if let Some(item) = self.line_done(&line) {
                    out.push(item);
                }
            } else if self.line.len() < Self::MAX_LINE {
                self.line.push(b);
            } else {
                self.line_cut = true;
            }
        }
        out
    }

    fn line_done(&mut self, line: &[u8]) -> Option<SseItem> {
        let line = String::from_utf8_lossy(line);
        if line.is_empty() {
            if !self.started {
                return None;
            }
            self.started = false;
            self.event_bytes = 0;
            return Some(SseItem::Event(std::mem::take(&mut self.pending)));
        }
        if let Some(comment) = line.strip_prefix(':') {
            return Some(SseItem::Comment(comment.trim_start().to_string()));
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        self.started = true;
        // One event is bounded as a whole, not only line by line (many `data:` lines add up).
        if self.event_bytes + value.len() > crate::probe::limits::MAX_EVENT_BYTES {
            self.pending.oversize = true;
            return None;
        }
        self.event_bytes += value.len();
        match field {
            "id" => self.pending.id = Some(value.to_string()),
            "event" => self.pending.event = Some(value.to_string()),
            "retry" => self.pending.retry_ms = value.trim().parse().ok(),
            "data" => match &mut self.pending.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.pending.data = Some(value.to_string()),
            },
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_of_many_data_lines_is_bounded_as_a_whole() {
        let mut p = SseParser::default();
        let line = format!("data: {}\n", "x".repeat(64 * 1024));
        let mut items = Vec::new();
        items.extend(p.feed(b"id: 1\n"));
        for _ in 0..40 {
            items.extend(p.feed(line.as_bytes()));
        }
        items.extend(p.feed(b"\nid: 2\ndata: small\n\n"));
        let evs: Vec<&RawEvent> =
            items.iter().filter_map(|i| if let SseItem::Event(e) = i { Some(e) } else { None }).collect();
        assert_eq!(evs.len(), 2);
        assert!(evs[0].oversize);
        assert!(evs[0].data.as_ref().is_some_and(|d| d.len() <= crate::probe::limits::MAX_EVENT_BYTES));
        assert!(!evs[1].oversize);
        assert_eq!(evs[1].data.as_deref(), Some("small"));
    }

    #[test]
    fn events_comments_priming_and_retry_survive_arbitrary_chunking() {
        let text = b": keepalive\n\nid: 1-0\nretry: 3000\ndata:\n\nid: 1-1\r\ndata: {\"a\":1}\r\ndata: x\r\n\r\nevent: close\ndata: bye\n\n";
        for split in 0..text.len() {
            let mut p = SseParser::default();
            let mut items = p.feed(&text[..split]);
            items.extend(p.feed(&text[split..]));
            assert_eq!(items.len(), 4, "split at {split}: {items:?}");
            assert_eq!(items[0], SseItem::Comment("keepalive".into()));
            let SseItem::Event(priming) = &items[1] else { panic!() };
            assert!(priming.is_priming());
            assert_eq!(priming.retry_ms, Some(3000));
            let SseItem::Event(e) = &items[2] else { panic!() };
            assert_eq!(e.data.as_deref(), Some("{\"a\":1}\nx"));
            assert!(!e.is_priming());
            let SseItem::Event(close) = &items[3] else { panic!() };
            assert_eq!(close.event.as_deref(), Some("close"));
        }
    }
}
