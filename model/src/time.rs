//! Simulated time as the model sees it: a point is given to every call, never read from a clock.

use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fmt;
use std::ops::{Add, Sub};
use std::time::Duration;

/// A point in simulated time, in microseconds since the start of the run.
///
/// The model never reads a clock: every call that depends on time takes `now: Instant`,
/// and callers must never pass a `now` earlier than one they passed before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Instant(pub u64);

impl Instant {
    /// The start of the run.
    pub const ZERO: Instant = Instant(0);

    /// Builds an instant from microseconds since the start of the run.
    pub const fn from_micros(us: u64) -> Self {
        Instant(us)
    }

    /// Microseconds since the start of the run.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// Time elapsed since `earlier`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(micros(d)))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_since(earlier)
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", format_micros(self.0))
    }
}

/// Keys each due at one instant, the earliest found at once: the table the server and the
/// balancer file their timers in, so that polling for the next timeout costs the same however many
/// connections, sessions and tools are open.
///
/// Moving a key's instant later, what most changes are (a keep-alive or an idle timeout pushed on
/// by each write), costs one lookup: the heap keeps an entry at or before each key's instant and
/// refiles it when it comes to the top. After every change the top entry is current, so
/// [`TimerTable::first`] is exact: the earliest instant, ties by key.
#[derive(Clone, Debug)]
pub struct TimerTable<K> {
    /// Each pending key's instant.
    due: BTreeMap<K, Instant>,
    /// Entries earliest first; each key of `due` has one at or before its instant. Others are
    /// stale (the key has moved or gone) and are refiled or dropped when they reach the top.
    heap: BinaryHeap<Reverse<(Instant, K)>>,
}

impl<K> Default for TimerTable<K> {
    fn default() -> Self {
        TimerTable { due: BTreeMap::new(), heap: BinaryHeap::new() }
    }
}

impl<K: Ord + Clone> TimerTable<K> {
    /// `key` is next due at `at` (nothing due: `None`).
    pub fn set(&mut self, key: K, at: Option<Instant>) {
        match (at, self.due.get_mut(&key)) {
            (None, None) => return,
            (None, Some(_)) => {
                self.due.remove(&key);
            }
            (Some(at), Some(old)) if *old == at => return,
            (Some(at), Some(old)) => {
                // Later: the entry at or before the old instant still stands for the key.
                let earlier = at < *old;
                *old = at;
                if earlier {
                    self.heap.push(Reverse((at, key)));
                }
            }
            (Some(at), None) => {
                self.due.insert(key.clone(), at);
                self.heap.push(Reverse((at, key)));
            }
        }
        self.settle();
    }

    /// The earliest pending key and its instant (ties: the least key).
    pub fn first(&self) -> Option<(Instant, &K)> {
        self.heap.peek().map(|Reverse((at, key))| (*at, key))
    }

    /// The keys due at or before `now`, in key order.
    pub fn due_by(&self, now: Instant) -> Vec<K> {
        let mut keys: Vec<K> = self
            .heap
            .iter()
            .filter(|Reverse((at, key))| *at <= now && self.due.get(key).is_some_and(|due| *due <= now))
            .map(|Reverse((_, key))| key.clone())
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// Makes the top entry current: a stale one is dropped, or refiled at its key's instant. The
    /// heap is rebuilt from `due` when stale entries outnumber the pending keys, so its size
    /// stays bounded by theirs.
    fn settle(&mut self) {
        if self.heap.len() > 2 * self.due.len() + 64 {
            self.heap = self.due.iter().map(|(key, at)| Reverse((*at, key.clone()))).collect();
        }
        while let Some(Reverse((at, key))) = self.heap.peek() {
            match self.due.get(key) {
                Some(due) if due == at => return,
                Some(due) if due > at => {
                    let due = *due;
                    let Reverse((_, key)) = self.heap.pop().expect("the entry just peeked");
                    self.heap.push(Reverse((due, key)));
                }
                _ => {
                    self.heap.pop();
                }
            }
        }
    }
}

/// A duration in whole microseconds, saturating at `u64::MAX`.
pub fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// `12.345s`, `4m05.000s`: how traces and timelines print simulated time.
pub fn format_micros(us: u64) -> String {
    let ms = us / 1_000;
    let (m, s, frac) = (ms / 60_000, (ms / 1_000) % 60, ms % 1_000);
    if m > 0 {
        format!("{m}m{s:02}.{frac:03}s")
    } else {
        format!("{s}.{frac:03}s")
    }
}

/// Parses durations as written on the command line and in scenario files: `250ms`, `60s`, `4m`,
/// `1h`, `1500us`. A bare number is rejected: the unit must be explicit.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .ok_or_else(|| format!("duration {text:?} has no unit (write e.g. 250ms, 60s, 4m)"))?;
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("duration {text:?} does not start with a number"))?;
    let scale_us = match unit {
        "us" | "µs" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "m" | "min" => 60e6,
        "h" => 3600e6,
        _ => return Err(format!("duration {text:?} has unknown unit {unit:?} (use us, ms, s, m or h)")),
    };
    let us = value * scale_us;
    if !us.is_finite() || !(0.0..=1e15).contains(&us) {
        return Err(format!("duration {text:?} is out of range"));
    }
    Ok(Duration::from_micros(us.round() as u64))
}

/// Writes a duration the way [`parse_duration`] reads it, choosing the largest exact unit.
pub fn format_duration(d: Duration) -> String {
    let us = micros(d);
    if us == 0 {
        "0s".to_string()
    } else if us.is_multiple_of(60_000_000) {
        format!("{}m", us / 60_000_000)
    } else if us.is_multiple_of(1_000_000) {
        format!("{}s", us / 1_000_000)
    } else if us.is_multiple_of(1_000) {
        format!("{}ms", us / 1_000)
    } else {
        format!("{us}us")
    }
}

/// Serde helper: durations are written as strings such as `"60s"` in scenarios and traces.
pub mod serde_duration {
    use super::{format_duration, parse_duration};
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    /// Writes a duration as text (`1.5s`).
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*d))
    }

    /// Reads a duration written as text.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        parse_duration(&text).map_err(serde::de::Error::custom)
    }
}

/// Serde helper for `Option<Duration>`: `null` (or `"none"` when read) for none.
pub mod serde_opt_duration {
    use super::{format_duration, parse_duration};
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    /// Writes an optional duration as text, or null.
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&format_duration(*d)),
            None => s.serialize_none(),
        }
    }

    /// Reads an optional duration written as text, or null.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(t) if t == "none" => Ok(None),
            Some(t) => parse_duration(&t).map(Some).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("4m"), Ok(Duration::from_secs(240)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("3min"), Ok(Duration::from_secs(180)));
        assert_eq!(parse_duration("1500us"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("60").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("5 parsecs").is_err());
    }

    #[test]
    fn durations_round_trip_through_their_text() {
        for d in
            [Duration::from_millis(250), Duration::from_secs(90), Duration::from_secs(240), Duration::from_micros(7)]
        {
            assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }
    }

    #[test]
    fn a_duration_beyond_a_billion_seconds_is_refused_as_out_of_range() {
        assert_eq!(parse_duration("1000000000s"), Ok(Duration::from_secs(1_000_000_000)));
        assert_eq!(parse_duration("2000000000h"), Err("duration \"2000000000h\" is out of range".into()));
        assert_eq!(parse_duration("1000000001s"), Err("duration \"1000000001s\" is out of range".into()));
    }

    #[test]
    fn the_seconds_of_an_instant_past_a_minute_are_those_left_over_the_whole_minutes() {
        assert_eq!(Instant(125_250_000).to_string(), "2m05.250s");
        assert_eq!(Instant(3_599_999_999).to_string(), "59m59.999s");
        assert_eq!(format_micros(59_999_999), "59.999s");
    }

    #[test]
    fn instants_print_as_minutes_and_seconds() {
        assert_eq!(Instant(61_500_000).to_string(), "1m01.500s");
        assert_eq!(Instant(1_000).to_string(), "0.001s");
    }

    /// The table against a plain map scanned on every read, over random changes: moves later
    /// and earlier, removals, keys tied at one instant.
    #[test]
    fn the_timer_table_answers_as_a_scan_of_every_key_would() {
        let mut rng = crate::rng::SplitMix64::new(7);
        let mut table: TimerTable<u32> = TimerTable::default();
        let mut plain: BTreeMap<u32, Instant> = BTreeMap::new();
        for _ in 0..20_000 {
            let key = (rng.next_u64() % 12) as u32;
            let at = match rng.next_u64() % 5 {
                0 => None,
                _ => Some(Instant(rng.next_u64() % 40)),
            };
            table.set(key, at);
            match at {
                Some(at) => plain.insert(key, at),
                None => plain.remove(&key),
            };
            let earliest = plain.iter().map(|(k, at)| (*at, k)).min();
            assert_eq!(table.first(), earliest);
            let now = Instant(rng.next_u64() % 40);
            let due: Vec<u32> = plain.iter().filter(|(_, at)| **at <= now).map(|(k, _)| *k).collect();
            assert_eq!(table.due_by(now), due);
            assert!(table.heap.len() <= 2 * plain.len() + 65, "stale entries are bounded");
        }
    }
}
