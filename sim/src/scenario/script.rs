//! A workload's call script as one line of text, the value of `--set app.calls=…` (and so of
//! a generated search case), and operator deletes as `--set app.operator_deletes=…`.
//!
//! `app.calls`: calls separated by `;`, each a time and optional `key=value` fields:
//!
//! - the time: `1s` (at 1 s), `+90s` (90 s of idle after the same client's previous call
//!   settled), or `1s+90s` (both: not before 1 s);
//! - `tool=NAME` (default: the scenario's first tool), `client=N` (default 0), `call=K` (default:
//!   the call's position), `on_error=give-up|reissue|reinitialize-reissue` (default give-up),
//!   `max_reissues=N` (default 1).
//!
//! `1s; +90s on_error=reissue` is two calls of the first tool by client 0: one at 1 s, one 90 s
//! after the first settled, re-issued once if it fails. `none` is no call. What it shows is what
//! it reads, fields at their default left out.
//!
//! `app.operator_deletes`: times separated by `,`, each `TIME` (client 0) or `TIME@N` (client
//! N), or `none`: the operator's `DELETE`s (the application's own stay as they are).

use super::{CallSpec, DeleteBy, DeleteSpec, OnError, Scenario};
use mcpsim_model::ids::CallKey;
use mcpsim_model::time::{format_duration, parse_duration};
use std::time::Duration;

/// Reads an `app.calls` value over `s` (whose first tool is the default).
pub(crate) fn parse_calls(s: &Scenario, v: &str) -> Result<Vec<CallSpec>, String> {
    let v = v.trim();
    if v == "none" || v.is_empty() {
        return Ok(vec![]);
    }
    let default_tool = s.tools.first().map(|t| t.name.clone()).unwrap_or_default();
    v.split(';').enumerate().map(|(i, entry)| parse_call(entry, i as u32, &default_tool)).collect()
}

fn parse_call(entry: &str, index: u32, default_tool: &str) -> Result<CallSpec, String> {
    let mut tokens = entry.split_whitespace();
    let time = tokens.next().ok_or_else(|| format!("call {index}: empty (write a time, e.g. 1s or +90s)"))?;
    let mut call = CallSpec::new(Duration::ZERO, index, default_tool);
    let (at, gap) = match time.split_once('+') {
        Some((at, gap)) => (at, Some(gap)),
        None => (time, None),
    };
    if !at.is_empty() {
        call.at = parse_duration(at).map_err(|m| format!("call {index}: {m}"))?;
    }
    if let Some(gap) = gap {
        call.after_idle = Some(parse_duration(gap).map_err(|m| format!("call {index}: {m}"))?);
    }
    for token in tokens {
        let (key, value) = token.split_once('=').ok_or_else(|| format!("call {index}: {token:?} is not key=value"))?;
        let count = || value.parse::<u32>().map_err(|_| format!("call {index}: {key}={value:?} is not a count"));
        match key {
            "tool" => call.tool = value.to_string(),
            "client" => call.client = count()?,
            "call" => call.call = CallKey(count()?),
            "on_error" => call.on_error = OnError::parse(value)?,
            "max_reissues" => call.max_reissues = count()?,
            _ => {
                return Err(format!(
                    "call {index}: unknown field {key:?} (a call has: tool, client, call, on_error, max_reissues)"
                ))
            }
        }
    }
    Ok(call)
}

/// The `app.calls` value of `s`'s calls.
pub(crate) fn show_calls(s: &Scenario) -> String {
    if s.calls.is_empty() {
        return "none".to_string();
    }
    let default_tool = s.tools.first().map(|t| t.name.as_str()).unwrap_or_default();
    let entries: Vec<String> = s
        .calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut out = match c.after_idle {
                None => format_duration(c.at),
                Some(gap) if c.at.is_zero() => format!("+{}", format_duration(gap)),
                Some(gap) => format!("{}+{}", format_duration(c.at), format_duration(gap)),
            };
            if c.tool != default_tool {
                out.push_str(&format!(" tool={}", c.tool));
            }
            if c.client != 0 {
                out.push_str(&format!(" client={}", c.client));
            }
            if c.call != CallKey(i as u32) {
                out.push_str(&format!(" call={}", c.call.0));
            }
            if c.on_error != OnError::GiveUp {
                out.push_str(&format!(" on_error={}", c.on_error.as_str()));
            }
            if c.max_reissues != 1 {
                out.push_str(&format!(" max_reissues={}", c.max_reissues));
            }
            out
        })
        .collect();
    entries.join("; ")
}

/// Replaces `s`'s operator deletes with those of an `app.operator_deletes` value.
pub(crate) fn apply_operator_deletes(s: &mut Scenario, v: &str) -> Result<(), String> {
    let mut deletes: Vec<DeleteSpec> = s.deletes.iter().filter(|d| d.by == DeleteBy::App).cloned().collect();
    let v = v.trim();
    if v != "none" && !v.is_empty() {
        for item in v.split(',') {
            let (at, client) = match item.trim().split_once('@') {
                Some((at, n)) => (at, n.parse::<u32>().map_err(|_| format!("{item:?}: @{n} is not a client"))?),
                None => (item.trim(), 0),
            };
            let at = parse_duration(at)?;
            deletes.push(DeleteSpec { at, client, by: DeleteBy::Operator });
        }
    }
    deletes.sort_by_key(|d| d.at);
    s.deletes = deletes;
    Ok(())
}

/// The `app.operator_deletes` value of `s`.
pub(crate) fn show_operator_deletes(s: &Scenario) -> String {
    let items: Vec<String> = s
        .deletes
        .iter()
        .filter(|d| d.by == DeleteBy::Operator)
        .map(|d| match d.client {
            0 => format_duration(d.at),
            n => format!("{}@{n}", format_duration(d.at)),
        })
        .collect();
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_reads_back_what_it_shows() {
        let mut s = Scenario::build("long-tool", "reference", "reference").unwrap();
        let text = "1s; +90s on_error=reissue; 2m+10s client=0 call=7 on_error=reinitialize-reissue max_reissues=3";
        s.calls = parse_calls(&s, text).unwrap();
        assert_eq!(s.calls.len(), 3);
        assert_eq!((s.calls[1].at, s.calls[1].after_idle), (Duration::ZERO, Some(Duration::from_secs(90))));
        assert_eq!((s.calls[2].call, s.calls[2].max_reissues), (CallKey(7), 3));
        assert_eq!(parse_calls(&s, &show_calls(&s)).unwrap(), s.calls);
        assert!(parse_calls(&s, "1s colour=red").unwrap_err().contains("unknown field"));
        assert!(parse_calls(&s, "soon").is_err());
        apply_operator_deletes(&mut s, "2m,30s@0").unwrap();
        assert_eq!(show_operator_deletes(&s), "30s,2m");
    }
}
