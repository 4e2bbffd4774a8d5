//! The task probe: a server's SEP-2663 task store seen through a tool that creates a task
//! (`probe_task`, the rmcp fixture's: `probe_work`'s counted work run by the SDK's
//! `TaskManager`), in the modern era, beside the scenarios.
//!
//! Two tasks: one with the SDK's default options (its `ttlMs` and `pollIntervalMs` are the
//! defaults, `tasks.ttl` and `tasks.poll_interval`), polled to its inline result; one whose work
//! (3 s) outlives its TTL (1.5 s), polled before and after the TTL and after its work would have
//! ended, and then at half a TTL and one and a half TTLs after it became terminal. What the polls
//! and `probe_count` show decides `tasks.expiry.working_at_ttl` (aborted and failed, deleted, or
//! kept), `tasks.expiry.sweep` (the `lastUpdatedAt` of the expiry: at the deadline, a timer; at
//! the poll that saw it, a sweep run by the call) and `tasks.expiry.terminal_kept_ttls`.

use crate::probe::fingerprint::{quote, Fingerprint};
use crate::probe::recorder::http::{Client, Endpoint, Item};
use crate::probe::recorder::rec::Rec;
use crate::probe::server::eras::modern_post_with;
use mcpsim_model::era::MODERN_VERSION;
use mcpsim_model::tasks::{ServerTasks, Sweep, WorkingAtTtl};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::time::{sleep_until, Instant};

/// The short TTL of the expiring task.
pub const SHORT_TTL: Duration = Duration::from_millis(1500);
/// The expiring task's work.
pub const LONG_WORK: Duration = Duration::from_millis(3000);

/// One `tasks/get` answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Poll {
    /// The task's status, its error message if failed, and `lastUpdatedAt - createdAt` in ms.
    Status {
        /// `working`, `completed`, `failed`, …
        status: String,
        /// The result inline (`completed`).
        result: bool,
        /// The error's message (`failed`).
        error: Option<String>,
        /// `lastUpdatedAt - createdAt`, when both parse.
        updated_after_ms: Option<i64>,
    },
    /// A JSON-RPC error: its code (`-32602`: no such task).
    Error(i64),
    /// No usable answer.
    Nothing(String),
}

impl Poll {
    /// `working`, `failed (message)`, `error -32602`, … for the tables.
    pub fn short(&self) -> String {
        match self {
            Poll::Status { status, error: Some(e), .. } => format!("{status} ({e})"),
            Poll::Status { status, result: true, .. } => format!("{status}, result inline"),
            Poll::Status { status, .. } => status.clone(),
            Poll::Error(c) => format!("error {c}"),
            Poll::Nothing(why) => format!("nothing ({why})"),
        }
    }
}

/// What the task probe saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskReport {
    /// The default task's `ttlMs` (`None`: unlimited) and `pollIntervalMs`.
    pub default_ttl_ms: Option<u64>,
    /// … its `pollIntervalMs`.
    pub default_poll_ms: Option<u64>,
    /// The default task polled after its work.
    pub default_done: Poll,
    /// The expiring task: before its TTL, just after it (TTL + 1 s), after its work.
    pub before_ttl: Poll,
    /// … TTL + 1 s.
    pub after_ttl: Poll,
    /// `probe_count` of its key after its work would have ended: (started, completed).
    pub count: Option<(u64, u64)>,
    /// Polled half a TTL after it became terminal.
    pub kept_half: Option<Poll>,
    /// … one and a half TTLs after.
    pub kept_one_and_half: Option<Poll>,
}

/// `lastUpdatedAt - createdAt` in ms, for RFC 3339 stamps of the same day (as the probe's are).
fn stamp_diff_ms(created: &str, updated: &str) -> Option<i64> {
    fn ms_of_day(s: &str) -> Option<i64> {
        let time = s.split_once('T')?.1;
        let time = time.split(['+', 'Z']).next()?;
        let mut parts = time.split(':');
        let (h, m, sec) = (parts.next()?, parts.next()?, parts.next()?);
        let secs: f64 = sec.parse().ok()?;
        Some((h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60) * 1000 + (secs * 1000.0).round() as i64)
    }
    let d = ms_of_day(updated)? - ms_of_day(created)?;
    Some(if d < 0 { d + 86_400_000 } else { d })
}

/// Sends one modern request declaring the Tasks extension: its JSON-RPC answer.
async fn rpc(client: &Client, id: u64, method: &str, params: Value) -> Result<Value, String> {
    let caps = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let out = modern_post_with(id, method, params, MODERN_VERSION, MODERN_VERSION, caps);
    let mut ex = client.send(out, None).await.map_err(|e| e.to_string())?;
    let status = ex.status;
    for item in ex.drain(Duration::from_secs(5)).await {
        let v = match item {
            Item::Json(v) => v,
            Item::Event(e) => match e.data.as_deref().and_then(|d| serde_json::from_str::<Value>(d).ok()) {
                Some(v) => v,
                None => continue,
            },
            _ => continue,
        };
        if v.get("id").is_some() {
            return Ok(v);
        }
    }
    Err(format!("{method} answered {status} with no JSON-RPC answer"))
}

async fn get(client: &Client, id: u64, task: &str) -> Poll {
    match rpc(client, id, "tasks/get", json!({"taskId": task})).await {
        Err(why) => Poll::Nothing(why),
        Ok(v) => {
            if let Some(code) = v["error"]["code"].as_i64() {
                return Poll::Error(code);
            }
            let r = &v["result"];
            let Some(status) = r["status"].as_str() else { return Poll::Nothing("no status".into()) };
            let updated_after_ms = match (r["createdAt"].as_str(), r["lastUpdatedAt"].as_str()) {
                (Some(c), Some(u)) => stamp_diff_ms(c, u),
                _ => None,
            };
            Poll::Status {
                status: status.to_string(),
                result: r.get("result").is_some(),
                error: r["error"]["message"].as_str().map(|m| m.chars().take(80).collect()),
                updated_after_ms,
            }
        }
    }
}

/// Runs the task probe if the server lists `probe_task` (on a modern `tools/list`); `None`
/// otherwise. `count` reads `probe_count` of a key.
pub async fn probe<F, Fut>(endpoint: &Endpoint, key: &str, count: F) -> Option<Result<TaskReport, String>>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Option<(u64, u64)>>,
{
    let client = Client::new(endpoint.clone(), Rec::new());
    let tools = rpc(&client, 9_200, "tools/list", json!({})).await.ok()?;
    let listed = tools["result"]["tools"].as_array()?.iter().any(|t| t["name"] == "probe_task");
    if !listed {
        return None;
    }
    Some(run(&client, key, count).await)
}

async fn create(client: &Client, id: u64, args: Value) -> Result<Value, String> {
    let v = rpc(client, id, "tools/call", json!({"name": "probe_task", "arguments": args})).await?;
    let r = &v["result"];
    if r["resultType"] != "task" || r["taskId"].as_str().is_none() {
        return Err(format!(
            "probe_task answered no CreateTaskResult: {}",
            v.to_string().chars().take(120).collect::<String>()
        ));
    }
    Ok(r.clone())
}

async fn run<F, Fut>(client: &Client, key: &str, count: F) -> Result<TaskReport, String>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Option<(u64, u64)>>,
{
    let ttl = SHORT_TTL.as_millis() as u64;
    let default = create(client, 9_201, json!({"duration_ms": 200, "key": format!("{key}-default")})).await?;
    let long_key = format!("{key}-expire");
    let t0 = Instant::now();
    let expiring =
        create(client, 9_202, json!({"duration_ms": LONG_WORK.as_millis() as u64, "ttl_ms": ttl, "key": long_key}))
            .await?;
    let (default_id, expiring_id) = (
        default["taskId"].as_str().unwrap_or_default().to_string(),
        expiring["taskId"].as_str().unwrap_or_default().to_string(),
    );
    sleep_until(t0 + Duration::from_millis(500)).await;
    let before_ttl = get(client, 9_203, &expiring_id).await;
    let default_done = get(client, 9_204, &default_id).await;
    sleep_until(t0 + SHORT_TTL + Duration::from_secs(1)).await;
    let seen_at = Instant::now();
    let after_ttl = get(client, 9_205, &expiring_id).await;
    sleep_until(t0 + LONG_WORK + Duration::from_millis(500)).await;
    let counted = count(long_key).await;
    // When it became terminal: at the poll that saw it failed when the sweep ran then, else at
    // the deadline.
    let terminal_at = match &after_ttl {
        Poll::Status { status, updated_after_ms: Some(d), .. } if status == "failed" => {
            if *d >= ttl as i64 + 600 {
                Some(seen_at)
            } else {
                Some(t0 + Duration::from_millis(*d as u64))
            }
        }
        _ => None,
    };
    let (mut kept_half, mut kept_one_and_half) = (None, None);
    if let Some(at) = terminal_at {
        sleep_until((at + SHORT_TTL / 2).max(Instant::now())).await;
        kept_half = Some(get(client, 9_206, &expiring_id).await);
        sleep_until(at + SHORT_TTL * 3 / 2).await;
        kept_one_and_half = Some(get(client, 9_207, &expiring_id).await);
    }
    Ok(TaskReport {
        default_ttl_ms: default["ttlMs"].as_u64(),
        default_poll_ms: default["pollIntervalMs"].as_u64(),
        default_done,
        before_ttl,
        after_ttl,
        count: counted,
        kept_half,
        kept_one_and_half,
    })
}

/// A `ServerTasks` field's TOML literal, in the profiles' serde form.
fn tasks_literal(tasks: &ServerTasks, field: &str) -> Option<String> {
    match serde_json::to_value(tasks).ok()?.get(field)? {
        Value::String(s) => Some(quote(s)),
        Value::Null => Some(quote("none")),
        other => Some(other.to_string()),
    }
}

fn enum_literal<T: serde::Serialize>(v: T) -> Option<String> {
    match serde_json::to_value(v).ok()? {
        Value::String(s) => Some(quote(&s)),
        _ => None,
    }
}

/// The fingerprint's `tasks.*` fields from the probe (left open with the reason when it did not
/// run or could not tell).
pub fn decide(fp: &mut Fingerprint, report: Option<&Result<TaskReport, String>>) {
    const FIELDS: [&str; 5] = [
        "tasks.ttl",
        "tasks.poll_interval",
        "tasks.expiry.working_at_ttl",
        "tasks.expiry.sweep",
        "tasks.expiry.terminal_kept_ttls",
    ];
    let r = match report {
        None => {
            for f in FIELDS {
                fp.leave_open(
                    f,
                    "no probe_task tool on a modern tools/list (only the rmcp fixture has one): no task was created",
                );
            }
            return;
        }
        Some(Err(why)) => {
            for f in FIELDS {
                fp.leave_open(f, format!("the task probe failed: {why}"));
            }
            return;
        }
        Some(Ok(r)) => r,
    };
    let defaults = ServerTasks {
        ttl: r.default_ttl_ms.map(Duration::from_millis),
        poll_interval: Duration::from_millis(r.default_poll_ms.unwrap_or(0)),
        ..ServerTasks::default()
    };
    let seen = format!(
        "probe_task with the SDK's default TaskOptions: CreateTaskResult ttlMs {:?}, pollIntervalMs {:?}",
        r.default_ttl_ms, r.default_poll_ms
    );
    if let Some(lit) = tasks_literal(&defaults, "ttl") {
        fp.decide("tasks.ttl", lit, seen.clone());
    }
    match r.default_poll_ms {
        Some(_) => {
            if let Some(lit) = tasks_literal(&defaults, "poll_interval") {
                fp.decide("tasks.poll_interval", lit, seen);
            }
        }
        None => fp.leave_open("tasks.poll_interval", "the CreateTaskResult named no pollIntervalMs"),
    }
    let ttl = SHORT_TTL.as_millis() as i64;
    let story = format!(
        "a task with ttlMs {ttl} and {} ms of work: polled at 0.5 s {}, at {:.1} s {}; probe_count after its work: {:?}",
        LONG_WORK.as_millis(),
        r.before_ttl.short(),
        (ttl + 1000) as f64 / 1000.0,
        r.after_ttl.short(),
        r.count
    );
    let working_before = matches!(&r.before_ttl, Poll::Status { status, .. } if status == "working");
    let rule = match (&r.after_ttl, r.count) {
        _ if !working_before => None,
        (Poll::Status { status, .. }, Some((s, 0))) if status == "failed" && s >= 1 => Some(WorkingAtTtl::AbortAndFail),
        (Poll::Error(-32602), _) => Some(WorkingAtTtl::DeleteRecord),
        (Poll::Status { status, .. }, _) if status == "working" => Some(WorkingAtTtl::Keep),
        _ => None,
    };
    match rule.and_then(enum_literal) {
        Some(lit) => fp.decide("tasks.expiry.working_at_ttl", lit, story.clone()),
        None => fp.leave_open("tasks.expiry.working_at_ttl", format!("no rule of the model says this: {story}")),
    }
    match &r.after_ttl {
        Poll::Status { status, updated_after_ms: Some(d), .. } if status == "failed" => {
            let sweep = if *d >= ttl + 600 {
                Some(Sweep::OnCall)
            } else if (*d - ttl).abs() <= 300 {
                Some(Sweep::Timer)
            } else {
                None
            };
            let why = format!(
                "the expired task's lastUpdatedAt is {d} ms after its createdAt (ttl {ttl} ms, polled at {} ms)",
                ttl + 1000
            );
            match sweep.and_then(enum_literal) {
                Some(lit) => fp.decide("tasks.expiry.sweep", lit, why),
                None => fp.leave_open("tasks.expiry.sweep", why),
            }
        }
        other => fp.leave_open("tasks.expiry.sweep", format!("the poll after the TTL saw {}", other.short())),
    }
    let present = |p: &Option<Poll>| matches!(p, Some(Poll::Status { .. }));
    let gone = |p: &Option<Poll>| matches!(p, Some(Poll::Error(-32602)));
    let why = format!(
        "the failed task polled half a TTL after it became terminal: {}; one and a half TTLs after: {}",
        r.kept_half.as_ref().map_or("not polled".into(), Poll::short),
        r.kept_one_and_half.as_ref().map_or("not polled".into(), Poll::short)
    );
    match (present(&r.kept_half), gone(&r.kept_one_and_half), gone(&r.kept_half)) {
        (true, true, _) => fp.decide("tasks.expiry.terminal_kept_ttls", "1", why),
        (_, _, true) => fp.decide("tasks.expiry.terminal_kept_ttls", "0", why),
        _ => fp.leave_open("tasks.expiry.terminal_kept_ttls", why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(s: &str, updated_after_ms: i64) -> Poll {
        Poll::Status {
            status: s.into(),
            result: false,
            error: (s == "failed").then(|| "task expired".into()),
            updated_after_ms: Some(updated_after_ms),
        }
    }

    fn rmcp_like() -> TaskReport {
        TaskReport {
            default_ttl_ms: Some(300_000),
            default_poll_ms: Some(1000),
            default_done: Poll::Status {
                status: "completed".into(),
                result: true,
                error: None,
                updated_after_ms: None,
            },
            before_ttl: status("working", 0),
            after_ttl: status("failed", 2510),
            count: Some((1, 0)),
            kept_half: Some(status("failed", 2510)),
            kept_one_and_half: Some(Poll::Error(-32602)),
        }
    }

    #[test]
    fn rmcp_s_task_manager_reads_as_its_profile() {
        let mut fp = Fingerprint::default();
        decide(&mut fp, Some(&Ok(rmcp_like())));
        assert_eq!(fp.value("tasks.ttl"), Some("\"5m\""));
        assert_eq!(fp.value("tasks.poll_interval"), Some("\"1s\""));
        assert_eq!(fp.value("tasks.expiry.working_at_ttl"), Some("\"abort-and-fail\""));
        assert_eq!(fp.value("tasks.expiry.sweep"), Some("\"on-call\""));
        assert_eq!(fp.value("tasks.expiry.terminal_kept_ttls"), Some("1"));
    }

    #[test]
    fn a_timer_a_deleted_record_and_work_that_ran_on_read_otherwise() {
        let mut timer = rmcp_like();
        timer.after_ttl = status("failed", 1530);
        let mut fp = Fingerprint::default();
        decide(&mut fp, Some(&Ok(timer)));
        assert_eq!(fp.value("tasks.expiry.sweep"), Some("\"timer\""));
        let mut deleted = rmcp_like();
        deleted.after_ttl = Poll::Error(-32602);
        deleted.count = Some((1, 1));
        let mut fp = Fingerprint::default();
        decide(&mut fp, Some(&Ok(deleted)));
        assert_eq!(fp.value("tasks.expiry.working_at_ttl"), Some("\"delete-record\""));
        assert_eq!(fp.value("tasks.expiry.sweep"), None);
        // Failed, but the work ran to its end: no model rule says so.
        let mut ran_on = rmcp_like();
        ran_on.count = Some((1, 1));
        let mut fp = Fingerprint::default();
        decide(&mut fp, Some(&Ok(ran_on)));
        assert_eq!(fp.value("tasks.expiry.working_at_ttl"), None);
        let mut fp = Fingerprint::default();
        decide(&mut fp, None);
        assert!(fp.open.contains_key("tasks.ttl"));
    }

    #[test]
    fn rfc3339_stamps_of_one_day_subtract() {
        let d = stamp_diff_ms("2026-12-04T05:48:23.469369517+00:00", "2026-12-04T05:48:25.516219112+00:00");
        assert_eq!(d, Some(2047));
        assert_eq!(stamp_diff_ms("2026-12-04T23:59:59.900Z", "2026-12-05T00:00:00.100Z"), Some(200));
    }
}
