//! Simulated time as the model sees it: a point is given to every call, never read from a clock.

use serde::{Deserialize, Serialize};
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
}
