//! Server notifications as a workload (`app.notifications`): like the calls, a schedule of their
//! own, independent of the faults. The older `notify_interval` sends them only until the faults
//! heal (so a run without faults has none); this one sends `count` of them, one every `interval`
//! from `from`, up to `until`.

use mcpsim_model::time::{format_duration, parse_duration, serde_duration, serde_opt_duration};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// When the server sends notifications on every live session's standalone stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotificationSpec {
    /// Time between two notifications.
    #[serde(with = "serde_duration")]
    pub interval: Duration,
    /// How many ticks at most (each notifies every live session once); `None`: no count limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// The first tick is one interval after this.
    #[serde(default, with = "serde_duration")]
    pub from: Duration,
    /// No tick after this; `None`: no end but the count.
    #[serde(default, with = "serde_opt_duration", skip_serializing_if = "Option::is_none")]
    pub until: Option<Duration>,
}

impl NotificationSpec {
    /// The `k`-th tick (from 1), if the schedule has one.
    fn tick(&self, k: u64) -> Option<Duration> {
        if k == 0 || self.count.is_some_and(|c| k > u64::from(c)) {
            return None;
        }
        let at = self.from.checked_add(self.interval.checked_mul(u32::try_from(k).ok()?)?)?;
        self.until.is_none_or(|u| at <= u).then_some(at)
    }

    /// The first tick strictly after `now`, if any.
    pub fn next_after(&self, now: Duration) -> Option<Duration> {
        if self.interval.is_zero() {
            return None;
        }
        let k = match now.checked_sub(self.from) {
            None => 1,
            Some(since) => (since.as_nanos() / self.interval.as_nanos()) as u64 + 1,
        };
        self.tick(k)
    }

    /// The last tick: the schedule's end (`None` when it has neither a count nor an end).
    pub fn last(&self) -> Option<Duration> {
        match (self.count, self.until) {
            (Some(c), _) => self.tick(u64::from(c)).or_else(|| self.until.and_then(|u| self.next_after_last(u))),
            (None, Some(u)) => self.next_after_last(u),
            (None, None) => None,
        }
    }

    /// The last tick at or before `until`.
    fn next_after_last(&self, until: Duration) -> Option<Duration> {
        let since = until.checked_sub(self.from)?;
        let k = (since.as_nanos() / self.interval.as_nanos().max(1)) as u64;
        self.tick(k)
    }

    /// `2s`, `2s,count=10`, `2s,count=10,from=30s,until=5m`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut parts = text.split(',').map(str::trim);
        let interval = parse_duration(parts.next().unwrap_or_default())?;
        let mut spec = NotificationSpec { interval, count: None, from: Duration::ZERO, until: None };
        for part in parts {
            let (key, value) =
                part.split_once('=').ok_or_else(|| format!("{part:?}: expected count=, from= or until="))?;
            match key.trim() {
                "count" => spec.count = Some(value.trim().parse().map_err(|_| format!("{value:?} is not a count"))?),
                "from" => spec.from = parse_duration(value)?,
                "until" => spec.until = Some(parse_duration(value)?),
                other => return Err(format!("unknown part {other:?}: count=, from= or until=")),
            }
        }
        Ok(spec)
    }

    /// The spec as `parse` reads it.
    pub fn show(&self) -> String {
        let mut out = format_duration(self.interval);
        if let Some(c) = self.count {
            out.push_str(&format!(",count={c}"));
        }
        if !self.from.is_zero() {
            out.push_str(&format!(",from={}", format_duration(self.from)));
        }
        if let Some(u) = self.until {
            out.push_str(&format!(",until={}", format_duration(u)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn ticks_follow_the_interval_from_the_start_up_to_the_count_or_the_end() {
        let spec = NotificationSpec::parse("2s,count=3,from=10s").unwrap();
        assert_eq!(spec.next_after(s(0)), Some(s(12)));
        assert_eq!(spec.next_after(s(12)), Some(s(14)));
        assert_eq!(spec.next_after(s(15)), Some(s(16)));
        assert_eq!(spec.next_after(s(16)), None);
        assert_eq!(spec.last(), Some(s(16)));
        let spec = NotificationSpec::parse("5s,until=21s").unwrap();
        assert_eq!(spec.next_after(s(19)), Some(s(20)));
        assert_eq!(spec.next_after(s(20)), None);
        assert_eq!(spec.last(), Some(s(20)));
        assert_eq!(NotificationSpec::parse(&spec.show()), Ok(spec));
        assert!(NotificationSpec::parse("2s,every=3").is_err());
    }
}
