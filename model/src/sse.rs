//! Event logs of SSE streams: what a server keeps for replay, how long, and how an event id
//! written by one of the real servers leads back to its stream and position.
//!
//! A [`StreamLog`] holds the retained events of one stream in append order, numbered by `seq`
//! from 0 (a priming event takes a seq too). It also remembers every id it ever issued, so a
//! `Last-Event-ID` can be told apart as retained, evicted (issued, no longer held) or unknown
//! (never issued here). An [`EventStore`] maps [`LogKey`]s to logs and applies the retention rule.
//! Which key a stream writes under is the server's choice (per session, or one store shared by
//! request id as the Python SDK does); the store does not care.

use crate::config::{EventIdScheme, ReplayRule, Retention};
use crate::http::{EventKind, ServerMessage, SseEvent};
use crate::ids::{CallKey, EventId, SessionId, StreamNo};
use crate::rng::SplitMix64;
use crate::time::Instant;
use std::collections::{BTreeMap, VecDeque};

/// The key the TypeScript and Python SDKs give the standalone GET stream.
pub const GET_STREAM_KEY: &str = "_GET_stream";

/// The TypeScript SDK writes `Date.now()` into its ids; simulated time 0 is mapped to this
/// epoch-millisecond value so ids have the real 13 digits.
pub const TS_CLOCK_BASE_MS: u64 = 1_700_000_000_000;

/// Which log a stream writes into.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogKey {
    /// A store of the session's own.
    Session(SessionId, StreamNo),
    /// The one store of a server process, keyed by the POST's JSON-RPC request id, or by
    /// [`GET_STREAM_KEY`] for the standalone stream of every session.
    Shared(String),
}

/// One event in a log.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredEvent {
    /// Its sequence number in the log, from 1.
    pub seq: u32,
    /// Its event id.
    pub id: EventId,
    /// Its place among every event the store was given, whatever its log (from 0): the order a
    /// store that keeps all its events in one list replays them in.
    pub order: u64,
    /// When it was stored.
    pub stored: Instant,
    /// The session that emitted it (in a shared store, not necessarily the one reading it).
    pub session: SessionId,
    /// The call whose stream it belongs to.
    pub call: Option<CallKey>,
    /// `None` for a priming event.
    pub message: Option<ServerMessage>,
}

impl StoredEvent {
    /// The event as written on the wire; priming events carry the server's `retry:` field.
    pub fn to_sse(&self, retry_ms: Option<u64>) -> SseEvent {
        SseEvent {
            id: Some(self.id.clone()),
            retry_ms: if self.message.is_none() { retry_ms } else { None },
            kind: EventKind::Message,
            data: self.message.clone(),
        }
    }
}

/// Where a `Last-Event-ID` points inside one log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// Issued, and nothing after it has been evicted (the event itself may be): a resume after it
    /// loses nothing. With its seq.
    Honourable(u32),
    /// Issued, and some event after it has been evicted: a resume after it cannot be complete.
    /// With its seq.
    Evicted(u32),
    /// Never issued by this log.
    Unknown,
}

/// The events of one stream.
#[derive(Clone, Debug, Default)]
pub struct StreamLog {
    events: VecDeque<StoredEvent>,
    /// Seqs issued so far: the next event's seq.
    issued: u32,
    /// Every id ever issued, evicted ones included, with its seq and its
    /// [`StoredEvent::order`] in the store.
    ids: BTreeMap<EventId, (u32, u64)>,
}

impl StreamLog {
    /// Number of events ever appended (the highest seq issued is one less).
    pub fn issued(&self) -> u32 {
        self.issued
    }

    /// Events still held, oldest first.
    pub fn retained(&self) -> impl Iterator<Item = &StoredEvent> {
        self.events.iter()
    }

    /// Seq of the oldest event still held.
    pub fn oldest_seq(&self) -> Option<u32> {
        self.events.front().map(|e| e.seq)
    }

    /// Id of the newest event still held: where a client told about a gap may resume.
    pub fn head_id(&self) -> Option<EventId> {
        self.events.back().map(|e| e.id.clone())
    }

    /// Id of the newest event no longer held: a client that resumes after it receives every
    /// event still held, so a gap reported up to it covers exactly what was lost.
    pub fn last_evicted_id(&self) -> Option<EventId> {
        let seq = self.oldest_seq().unwrap_or(self.issued).checked_sub(1)?;
        self.ids.iter().find(|(_, (s, _))| *s == seq).map(|(id, _)| id.clone())
    }

    /// Where `id` stands in this log: honourable, evicted or unknown.
    pub fn position(&self, id: &EventId) -> Position {
        match self.ids.get(id) {
            Some(&(seq, _)) if self.evicted_after(seq) == 0 => Position::Honourable(seq),
            Some(&(seq, _)) => Position::Evicted(seq),
            None => Position::Unknown,
        }
    }

    /// Events issued after `seq`, held or not.
    pub fn issued_after(&self, seq: u32) -> u32 {
        self.issued.saturating_sub(seq.saturating_add(1))
    }

    /// Events issued after `seq` that are no longer held.
    pub fn evicted_after(&self, seq: u32) -> u32 {
        let first_held = self.oldest_seq().unwrap_or(self.issued);
        first_held.saturating_sub(seq.saturating_add(1))
    }

    /// The replay for a retained event of seq `seq`, in log order.
    pub fn replay_by_seq(&self, seq: u32, rule: ReplayRule) -> Vec<StoredEvent> {
        self.events.iter().filter(|e| follows(e.seq.cmp(&seq), rule)).cloned().collect()
    }

    /// The TypeScript SDK's replay: the events whose id sorts after `id` (as strings), in sorted
    /// order. Events stored in the same millisecond sort by their random suffix, so this order
    /// can differ from the order they were stored in: that is the SDK's behaviour, kept.
    pub fn replay_by_id_order(&self, id: &EventId, rule: ReplayRule) -> Vec<StoredEvent> {
        let mut events: Vec<StoredEvent> =
            self.events.iter().filter(|e| follows(e.id.as_str().cmp(id.as_str()), rule)).cloned().collect();
        events.sort_by(|a, b| a.id.0.cmp(&b.id.0));
        events
    }

    fn push(&mut self, event: StoredEvent, max_events: Option<u32>) {
        self.ids.insert(event.id.clone(), (event.seq, event.order));
        self.events.push_back(event);
        if let Some(max) = max_events {
            while self.events.len() > max as usize {
                self.events.pop_front();
            }
        }
    }

    fn evict_older_than(&mut self, now: Instant, window: std::time::Duration) {
        while self.events.front().is_some_and(|e| now.saturating_since(e.stored) > window) {
            self.events.pop_front();
        }
    }
}

/// Whether an event comparing `order` to the resume point is replayed under `rule`.
fn follows(order: std::cmp::Ordering, rule: ReplayRule) -> bool {
    match rule {
        ReplayRule::After => order.is_gt(),
        ReplayRule::From => order.is_ge(),
    }
}

/// The logs of a server process, under one retention rule.
#[derive(Clone, Debug)]
pub struct EventStore {
    retention: Retention,
    logs: BTreeMap<LogKey, StreamLog>,
    /// The next seq of each shared key whose log was dropped: a key's log made again numbers on
    /// from there, so no two events of one key get one number. Only a key of a store shared by
    /// request id comes back: two requests of one id (two sessions', or two sessionless clients')
    /// write under it, and the first one's response drops what the other is still writing to.
    dropped: BTreeMap<LogKey, u32>,
    /// Events appended so far, over every log: the next event's [`StoredEvent::order`].
    appended: u64,
}

/// What an appended event is about.
#[derive(Clone, Debug, PartialEq)]
pub struct NewEvent {
    /// The session the stream belongs to.
    pub session: SessionId,
    /// The call whose stream it is.
    pub call: Option<CallKey>,
    /// The message (`None` for a priming event).
    pub message: Option<ServerMessage>,
}

impl EventStore {
    /// An empty store under `retention`.
    pub fn new(retention: Retention) -> Self {
        EventStore { retention, logs: BTreeMap::new(), dropped: BTreeMap::new(), appended: 0 }
    }

    /// Appends an event to `key`'s log (creating it), numbering it and naming it with `mint(seq)`,
    /// then evicts what the retention rule no longer holds.
    pub fn append(
        &mut self,
        key: &LogKey,
        now: Instant,
        event: NewEvent,
        mint: impl FnOnce(u32) -> EventId,
    ) -> StoredEvent {
        let (max_events, window) = (self.retention.max_events, self.retention.window);
        let dropped = &mut self.dropped;
        let log = self
            .logs
            .entry(key.clone())
            .or_insert_with(|| StreamLog { issued: dropped.remove(key).unwrap_or(0), ..StreamLog::default() });
        if let Some(window) = window {
            log.evict_older_than(now, window);
        }
        let seq = log.issued;
        log.issued = log.issued.saturating_add(1);
        let order = self.appended;
        self.appended = self.appended.saturating_add(1);
        let stored = StoredEvent {
            seq,
            id: mint(seq),
            order,
            stored: now,
            session: event.session,
            call: event.call,
            message: event.message,
        };
        log.push(stored.clone(), max_events);
        stored
    }

    /// Applies the time window to `key`'s log (eviction is lazy: on append and before a resume).
    pub fn expire(&mut self, key: &LogKey, now: Instant) {
        if let (Some(window), Some(log)) = (self.retention.window, self.logs.get_mut(key)) {
            log.evict_older_than(now, window);
        }
    }

    /// The retention rule its logs are kept under.
    pub fn retention(&self) -> &Retention {
        &self.retention
    }

    /// The log under `key`, if it exists.
    pub fn log(&self, key: &LogKey) -> Option<&StreamLog> {
        self.logs.get(key)
    }

    /// Forgets a log entirely: its ids become unknown. A shared key's numbering goes on if its
    /// log is made again (see [`EventStore::dropped`]).
    pub fn drop_log(&mut self, key: &LogKey) {
        if let (Some(log), LogKey::Shared(_)) = (self.logs.remove(key), key) {
            self.dropped.insert(key.clone(), log.issued);
        }
    }

    /// Forgets every log of a session's own store.
    pub fn drop_session(&mut self, session: &SessionId) {
        self.logs.retain(|key, _| !matches!(key, LogKey::Session(s, _) if s == session));
    }

    /// A replay drawn from every log `in_scope` accepts, not only `key`'s (`replay_scope =
    /// store`): the events held anywhere in scope that follow `id` of `key`'s log under `rule`,
    /// as one list of the store's. By append order (a store that keeps its events in one list,
    /// servers#4087's `Map`), or, `by_id_order`, by id text (the TypeScript example store's
    /// `localeCompare` sort, with its stream filter gone). Empty when `key`'s log never issued `id`.
    pub fn replay_across(
        &self,
        key: &LogKey,
        id: &EventId,
        rule: ReplayRule,
        by_id_order: bool,
        in_scope: impl Fn(&LogKey) -> bool,
    ) -> Vec<StoredEvent> {
        let Some(&(_, point)) = self.logs.get(key).and_then(|log| log.ids.get(id)) else { return Vec::new() };
        let held = self.logs.iter().filter(|(k, _)| *k == key || in_scope(k)).flat_map(|(_, log)| log.events.iter());
        let mut events: Vec<StoredEvent> = if by_id_order {
            held.filter(|e| follows(e.id.as_str().cmp(id.as_str()), rule)).cloned().collect()
        } else {
            held.filter(|e| follows(e.order.cmp(&point), rule)).cloned().collect()
        };
        if by_id_order {
            events.sort_by(|a, b| a.id.0.cmp(&b.id.0));
        } else {
            events.sort_by_key(|e| e.order);
        }
        events
    }

    /// The log that issued `id`, among those `in_scope` accepts (for opaque ids, found by lookup).
    pub fn find_issuer(&self, id: &EventId, in_scope: impl Fn(&LogKey) -> bool) -> Option<LogKey> {
        self.logs.iter().find(|(key, log)| in_scope(key) && log.ids.contains_key(id)).map(|(key, _)| key.clone())
    }
}

/// How a scheme's event id leads to its stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamHint {
    /// The id names the session's stream number.
    Number(StreamNo),
    /// The id starts with a stream label (TypeScript: the text before the first `_`).
    Label(String),
    /// The id says nothing: look it up in the store (Python).
    Lookup,
}

/// Writes the id of the `seq`-th event of a stream. `label` is the stream's TypeScript stream id
/// (a uuid, or [`GET_STREAM_KEY`]); other schemes ignore it.
pub fn mint_event_id(
    scheme: EventIdScheme,
    stream: StreamNo,
    label: &str,
    seq: u32,
    now: Instant,
    rng: &mut SplitMix64,
) -> EventId {
    let text = match scheme {
        EventIdScheme::Reference => format!("{}-{seq}", stream.0),
        EventIdScheme::TsSdk => {
            let ms = TS_CLOCK_BASE_MS + now.as_micros() / 1_000;
            format!("{label}_{ms}_{}", rng.alnum(8))
        }
        EventIdScheme::PySdk => rng.uuid(),
        EventIdScheme::Rmcp if stream == StreamNo::STANDALONE => format!("{seq}"),
        EventIdScheme::Rmcp => format!("{seq}/{}", stream.0),
    };
    EventId::from(text)
}

/// Where a scheme says to look for `id`'s stream; `None` when the id cannot be read at all.
pub fn stream_hint(scheme: EventIdScheme, id: &EventId) -> Option<StreamHint> {
    let text = id.as_str();
    match scheme {
        EventIdScheme::Reference => {
            let (stream, seq) = text.split_once('-')?;
            seq.parse::<u32>().ok()?;
            Some(StreamHint::Number(StreamNo(stream.parse().ok()?)))
        }
        EventIdScheme::Rmcp => match text.split_once('/') {
            Some((seq, stream)) => {
                seq.parse::<u32>().ok()?;
                Some(StreamHint::Number(StreamNo(stream.parse().ok()?)))
            }
            None => text.parse::<u32>().ok().map(|_| StreamHint::Number(StreamNo::STANDALONE)),
        },
        EventIdScheme::TsSdk => {
            // The SDK's `eventId.split('_')[0]`: for `_GET_stream_…` that is "", which it treats
            // as "no stream", so standalone-stream ids can never be resumed.
            let label = text.split('_').next().unwrap_or_default();
            (!label.is_empty()).then(|| StreamHint::Label(label.to_string()))
        }
        EventIdScheme::PySdk => Some(StreamHint::Lookup),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::RequestId;
    use std::time::Duration;

    fn key() -> LogKey {
        LogKey::Session(SessionId::from("0-1"), StreamNo(1))
    }

    fn progress(step: u32) -> NewEvent {
        NewEvent {
            session: SessionId::from("0-1"),
            call: Some(CallKey(7)),
            message: Some(ServerMessage::Progress { request: RequestId(2), call: CallKey(7), step }),
        }
    }

    fn fill(store: &mut EventStore, n: u32, every: Duration) {
        for i in 0..n {
            let now = Instant::ZERO + every * i;
            store.append(&key(), now, progress(i), |seq| EventId::from(format!("1-{seq}")));
        }
    }

    fn seqs(events: &[StoredEvent]) -> Vec<u32> {
        events.iter().map(|e| e.seq).collect()
    }

    /// A store shared by request id: request `#1` of two clients writes under one key, and the
    /// first one's response drops the log while the second still writes (a swarm sweep of
    /// stateless-2026 × stateless-2026 read the numbering that started again as events out of
    /// order, and an id given twice as a duplicate). The key numbers on; its old ids are gone.
    #[test]
    fn a_shared_key_made_again_after_its_drop_numbers_on() {
        let mut store = EventStore::new(Retention::UNBOUNDED);
        let shared = LogKey::Shared("1".into());
        let id = |seq| EventId::from(format!("1-{seq}"));
        for step in 0..3 {
            store.append(&shared, Instant::ZERO, progress(step), id);
        }
        store.drop_log(&shared);
        assert!(store.log(&shared).is_none());
        let next = store.append(&shared, Instant::ZERO, progress(3), id);
        assert_eq!((next.seq, next.id), (3, id(3)));
        let log = store.log(&shared).expect("made again");
        assert_eq!(log.position(&id(1)), Position::Unknown, "the dropped ids are unknown");
        assert_eq!(log.position(&id(3)), Position::Honourable(3));
        // A session's own key is never made again: nothing is kept of it.
        store.append(&key(), Instant::ZERO, progress(0), id);
        store.drop_log(&key());
        assert_eq!(store.append(&key(), Instant::ZERO, progress(1), id).seq, 0);
        assert_eq!(store.dropped.len(), 0);
    }

    /// A replay drawn from every log in scope (`replay_scope = store`): by append order across
    /// the logs, or by id text under the TypeScript scheme; the rule says whether the named event
    /// comes too; a log out of scope gives nothing, and an id the log never issued gives nothing.
    #[test]
    fn a_store_wide_replay_follows_the_stores_order_across_logs_in_scope() {
        let mut store = EventStore::new(Retention::UNBOUNDED);
        let (one, two) = (key(), LogKey::Session(SessionId::from("0-1"), StreamNo(2)));
        let other = LogKey::Session(SessionId::from("0-2"), StreamNo(1));
        // Appended in this order: 1-0, 2-0, 1-1, 9-0 (another session's), 2-1.
        for (k, id) in [(&one, "1-0"), (&two, "2-0"), (&one, "1-1"), (&other, "9-0"), (&two, "2-1")] {
            store.append(k, Instant::ZERO, progress(0), |_| EventId::from(id));
        }
        let own = |k: &LogKey| matches!(k, LogKey::Session(s, _) if *s == SessionId::from("0-1"));
        let ids = |events: Vec<StoredEvent>| events.into_iter().map(|e| e.id.0.to_string()).collect::<Vec<_>>();
        let after = store.replay_across(&one, &EventId::from("1-0"), ReplayRule::After, false, own);
        assert_eq!(ids(after), ["2-0", "1-1", "2-1"]);
        let from = store.replay_across(&one, &EventId::from("1-0"), ReplayRule::From, false, own);
        assert_eq!(ids(from), ["1-0", "2-0", "1-1", "2-1"]);
        let every = store.replay_across(&two, &EventId::from("2-0"), ReplayRule::After, false, |_| true);
        assert_eq!(ids(every), ["1-1", "9-0", "2-1"], "a store shared by all: the other session's too");
        let by_text = store.replay_across(&two, &EventId::from("1-1"), ReplayRule::After, true, own);
        assert!(by_text.is_empty(), "1-1 is no id of stream 2's log");
        let by_text = store.replay_across(&one, &EventId::from("1-0"), ReplayRule::After, true, own);
        assert_eq!(ids(by_text), ["1-1", "2-0", "2-1"], "sorted as text, not as stored");
    }

    #[test]
    fn a_bounded_log_evicts_oldest_first_and_remembers_what_it_issued() {
        let mut store = EventStore::new(Retention::last(3));
        fill(&mut store, 5, Duration::from_secs(1));
        let log = store.log(&key()).expect("appended");
        assert_eq!(log.issued(), 5);
        assert_eq!(log.oldest_seq(), Some(2));
        assert_eq!(log.head_id(), Some(EventId::from("1-4")));
        assert_eq!(log.position(&EventId::from("1-3")), Position::Honourable(3));
        assert_eq!(log.position(&EventId::from("1-0")), Position::Evicted(0));
        assert_eq!(log.position(&EventId::from("1-9")), Position::Unknown);
        assert_eq!(log.issued_after(0), 4);
        assert_eq!(log.evicted_after(0), 1);
    }

    #[test]
    fn a_time_window_evicts_events_older_than_it() {
        let mut store = EventStore::new(Retention {
            max_events: None,
            window: Some(Duration::from_secs(3)),
            drop_on_response: false,
        });
        fill(&mut store, 5, Duration::from_secs(1));
        // At 4s the event stored at 0s is 4s old: evicted on that append.
        assert_eq!(store.log(&key()).and_then(StreamLog::oldest_seq), Some(1));
        store.expire(&key(), Instant::ZERO + Duration::from_secs(10));
        let log = store.log(&key()).expect("kept, only emptied");
        assert_eq!(log.oldest_seq(), None);
        // Everything is gone, but nothing after 1-4 was ever issued: resuming after it loses nothing.
        assert_eq!(log.position(&EventId::from("1-4")), Position::Honourable(4));
        assert_eq!(log.position(&EventId::from("1-3")), Position::Evicted(3));
        assert_eq!(log.last_evicted_id(), Some(EventId::from("1-4")));
    }

    #[test]
    fn replay_after_excludes_and_from_includes_the_given_event() {
        let mut store = EventStore::new(Retention::UNBOUNDED);
        fill(&mut store, 5, Duration::from_secs(1));
        let log = store.log(&key()).expect("appended");
        assert_eq!(seqs(&log.replay_by_seq(2, ReplayRule::After)), vec![3, 4]);
        assert_eq!(seqs(&log.replay_by_seq(2, ReplayRule::From)), vec![2, 3, 4]);
    }

    #[test]
    fn typescript_replay_follows_string_order_not_store_order() {
        let mut store = EventStore::new(Retention::UNBOUNDED);
        // Same millisecond: the random suffixes decide the order.
        for (i, suffix) in ["m", "z", "a"].iter().enumerate() {
            let mut e = progress(i as u32);
            e.call = None;
            store.append(&key(), Instant::ZERO, e, |_| EventId::from(format!("s_1700000000000_{suffix}")));
        }
        let log = store.log(&key()).expect("appended");
        let first = EventId::from("s_1700000000000_m");
        let replayed = log.replay_by_id_order(&first, ReplayRule::After);
        assert_eq!(seqs(&replayed), vec![1], "only the id sorting after `m` is replayed; `a` is lost");
        let from_a = log.replay_by_id_order(&EventId::from("s_1700000000000_a"), ReplayRule::After);
        assert_eq!(seqs(&from_a), vec![0, 1], "sorted order, not store order");
    }

    #[test]
    fn dropping_logs_makes_their_ids_unknown() {
        let mut store = EventStore::new(Retention::UNBOUNDED);
        fill(&mut store, 2, Duration::from_secs(1));
        let shared = LogKey::Shared("5".into());
        store.append(&shared, Instant::ZERO, progress(0), |_| EventId::from("u-1"));
        assert_eq!(store.find_issuer(&EventId::from("1-1"), |_| true), Some(key()));
        assert_eq!(store.find_issuer(&EventId::from("u-1"), |k| matches!(k, LogKey::Session(..))), None);
        store.drop_session(&SessionId::from("0-1"));
        assert!(store.log(&key()).is_none());
        assert!(store.log(&shared).is_some());
        store.drop_log(&shared);
        assert_eq!(store.find_issuer(&EventId::from("u-1"), |_| true), None);
    }

    #[test]
    fn each_scheme_writes_ids_that_lead_back_to_their_stream() {
        let mut rng = SplitMix64::new(1);
        let now = Instant::from_micros(2_345_678);
        let mint =
            |scheme, stream, label: &str, rng: &mut SplitMix64| mint_event_id(scheme, stream, label, 4, now, rng);
        let reference = mint(EventIdScheme::Reference, StreamNo(3), "", &mut rng);
        assert_eq!(reference, EventId::from("3-4"));
        assert_eq!(stream_hint(EventIdScheme::Reference, &reference), Some(StreamHint::Number(StreamNo(3))));
        let rmcp = mint(EventIdScheme::Rmcp, StreamNo(3), "", &mut rng);
        assert_eq!(rmcp, EventId::from("4/3"));
        assert_eq!(stream_hint(EventIdScheme::Rmcp, &rmcp), Some(StreamHint::Number(StreamNo(3))));
        let rmcp_get = mint(EventIdScheme::Rmcp, StreamNo::STANDALONE, "", &mut rng);
        assert_eq!(rmcp_get, EventId::from("4"));
        assert_eq!(stream_hint(EventIdScheme::Rmcp, &rmcp_get), Some(StreamHint::Number(StreamNo::STANDALONE)));
        let ts = mint(EventIdScheme::TsSdk, StreamNo(1), "abc-uuid", &mut rng);
        let parts: Vec<&str> = ts.0.split('_').collect();
        assert_eq!(parts[..2], ["abc-uuid", "1700000002345"]);
        assert_eq!(parts[2].len(), 8);
        assert_eq!(stream_hint(EventIdScheme::TsSdk, &ts), Some(StreamHint::Label("abc-uuid".into())));
        let ts_get = mint(EventIdScheme::TsSdk, StreamNo::STANDALONE, GET_STREAM_KEY, &mut rng);
        assert!(ts_get.0.starts_with("_GET_stream_1700000002345_"));
        assert_eq!(stream_hint(EventIdScheme::TsSdk, &ts_get), None, "the SDK's split yields an empty stream id");
        let py = mint(EventIdScheme::PySdk, StreamNo(1), "", &mut rng);
        assert_eq!(py.0.len(), 36);
        assert_eq!(stream_hint(EventIdScheme::PySdk, &py), Some(StreamHint::Lookup));
        for garbage in ["", "x-1", "1-", "1/x", "-"] {
            assert_eq!(stream_hint(EventIdScheme::Reference, &EventId::from(garbage)), None, "{garbage:?}");
        }
        assert_eq!(stream_hint(EventIdScheme::Rmcp, &EventId::from("a")), None);
    }

    #[test]
    fn priming_events_carry_retry_and_messages_do_not() {
        let mut store = EventStore::new(Retention::UNBOUNDED);
        let priming = NewEvent { session: SessionId::from("0-1"), call: None, message: None };
        let p = store.append(&key(), Instant::ZERO, priming, |_| EventId::from("1-0"));
        let m = store.append(&key(), Instant::ZERO, progress(1), |_| EventId::from("1-1"));
        assert!(p.to_sse(Some(3000)).is_priming());
        assert_eq!(p.to_sse(Some(3000)).retry_ms, Some(3000));
        assert_eq!(m.to_sse(Some(3000)).retry_ms, None);
        assert_eq!((p.seq, m.seq), (0, 1));
    }
}
