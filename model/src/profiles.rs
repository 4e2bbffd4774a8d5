//! Named profiles: the policy values of the design note's reference implementations, its two
//! incidents, and the real SDKs (`shared/docs/sdk-profiles.md`, protocol 2025-11-25).

use crate::config::*;
use std::time::Duration;

const fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// Client profile names, in the order `mcpsim profiles` lists them.
pub const CLIENT_NAMES: &[&str] = &["reference", "naive", "ts-sdk", "py-sdk", "rmcp", "stateless-2026"];

/// Server profile names, in the order `mcpsim profiles` lists them.
pub const SERVER_NAMES: &[&str] = &["reference", "silent-head", "ts-sdk", "py-sdk", "rmcp", "stateless-2026"];

/// One line on each profile, for `mcpsim profiles`.
pub fn describe(name: &str) -> &'static str {
    match name {
        "reference" => "the design note's decision procedure / conditions of validity",
        "naive" => "first incident: a reset is fatal; re-initialize and re-send the call",
        "silent-head" => "second incident: 100 events per stream; an evicted id resumes silently at the head",
        "ts-sdk" => "TypeScript @modelcontextprotocol/sdk 1.32.2",
        "py-sdk" => "Python mcp 2.3.0",
        "rmcp" => "Rust rmcp 3.11.0",
        "stateless-2026" => {
            "contrast: 2026-07-28 revision, no sessions or resumption; a break cancels, the client re-issues"
        }
        _ => "",
    }
}

/// The client profile of that name.
pub fn client(name: &str) -> Option<ClientPolicy> {
    let p = match name {
        "reference" => ClientPolicy {
            name: name.into(),
            close_handling: CloseHandling::DecisionProcedure,
            persistence: Persistence::Durable,
            reconnect: ReconnectPolicy {
                initial: secs(1),
                factor: 2.0,
                max: secs(30),
                max_attempts: Some(20),
                counter_reset: CounterReset::OnSuccessfulReconnect,
                retry_field: RetryField::AtLeast,
                first_immediate: false,
                jitter: 0.2,
            },
            request_timeout: None,
            open_standalone_stream: false,
            send_idempotency_keys: false,
            sessions: true,
        },
        "naive" => ClientPolicy {
            name: name.into(),
            close_handling: CloseHandling::ReinitializeAndResend,
            persistence: Persistence::Volatile,
            reconnect: ReconnectPolicy {
                initial: secs(1),
                factor: 2.0,
                max: secs(30),
                max_attempts: Some(5),
                counter_reset: CounterReset::OnSuccessfulReconnect,
                retry_field: RetryField::Ignore,
                first_immediate: false,
                jitter: 0.2,
            },
            request_timeout: None,
            open_standalone_stream: false,
            send_idempotency_keys: false,
            sessions: true,
        },
        "ts-sdk" => ClientPolicy {
            name: name.into(),
            close_handling: CloseHandling::Sdk(SdkRules {
                on_404: On404::FailKeepSession,
                on_empty_resume: OnEmptyResume::WithoutId,
                resume_post_needs_event_id: true,
            }),
            persistence: Persistence::Volatile,
            reconnect: ReconnectPolicy {
                initial: secs(1),
                factor: 1.5,
                max: secs(30),
                max_attempts: Some(2),
                counter_reset: CounterReset::OnSuccessfulReconnect,
                retry_field: RetryField::Replaces,
                first_immediate: false,
                jitter: 0.0,
            },
            request_timeout: Some(secs(60)),
            open_standalone_stream: true,
            send_idempotency_keys: false,
            sessions: true,
        },
        "py-sdk" => ClientPolicy {
            name: name.into(),
            close_handling: CloseHandling::Sdk(SdkRules {
                on_404: On404::FailKeepSession,
                on_empty_resume: OnEmptyResume::SameId,
                resume_post_needs_event_id: true,
            }),
            persistence: Persistence::Volatile,
            reconnect: ReconnectPolicy {
                initial: secs(1),
                factor: 1.0,
                max: secs(1),
                max_attempts: Some(2),
                counter_reset: CounterReset::WhenSuccessfulReconnectEnds,
                retry_field: RetryField::Replaces,
                first_immediate: false,
                jitter: 0.0,
            },
            request_timeout: None,
            open_standalone_stream: true,
            send_idempotency_keys: false,
            sessions: true,
        },
        "rmcp" => ClientPolicy {
            name: name.into(),
            close_handling: CloseHandling::Sdk(SdkRules {
                on_404: On404::ReinitializeResendOnce,
                on_empty_resume: OnEmptyResume::CleanClose,
                resume_post_needs_event_id: true,
            }),
            persistence: Persistence::Volatile,
            reconnect: ReconnectPolicy {
                initial: secs(1),
                factor: 2.0,
                max: secs(300),
                max_attempts: None,
                counter_reset: CounterReset::OnEvent,
                retry_field: RetryField::AtLeast,
                first_immediate: true,
                jitter: 0.0,
            },
            request_timeout: None,
            open_standalone_stream: true,
            send_idempotency_keys: false,
            sessions: true,
        },
        // No session, no standalone stream, no resumption: a broken stream is re-issued with a
        // new id after the same backoff as the reference client's (the revision names none).
        "stateless-2026" => ClientPolicy {
            name: name.into(),
            close_handling: CloseHandling::ReissueWithNewId,
            sessions: false,
            // Otherwise the naive client's values: in-memory state, bounded re-issues.
            ..client("naive").expect("the naive profile exists")
        },
        _ => return None,
    };
    Some(p)
}

/// The server profile of that name.
pub fn server(name: &str) -> Option<ServerPolicy> {
    let reference = ServerPolicy {
        name: name.into(),
        event_ids: EventIdScheme::Reference,
        store: StoreScope::PerSession,
        retention: Retention::last(100),
        replay: ReplayRule::After,
        unknown_id: Unhonourable::Gone410,
        evicted_id: Unhonourable::Gone410,
        priming: Priming { post: true, standalone: true, resume: true },
        retry_ms: None,
        keepalive: None,
        idle_ttl: Some(secs(1800)),
        idle_rule: IdleRule::NeverWhileBusy,
        delete_running_tool: DeleteRule::Cancel,
        delete_unknown_status: 404,
        delete_status: 200,
        second_get: SecondGet::Reject409,
        honour_idempotency_keys: false,
        sessions: true,
        disconnect_cancels: false,
    };
    let p = match name {
        "reference" => reference,
        "silent-head" => {
            ServerPolicy { unknown_id: Unhonourable::SilentHead, evicted_id: Unhonourable::SilentHead, ..reference }
        }
        "ts-sdk" => ServerPolicy {
            event_ids: EventIdScheme::TsSdk,
            retention: Retention::UNBOUNDED,
            unknown_id: Unhonourable::EmptyOpen,
            evicted_id: Unhonourable::EmptyOpen,
            priming: Priming { post: true, standalone: false, resume: false },
            keepalive: Some(secs(15)),
            idle_rule: IdleRule::NoOpenRequest,
            delete_running_tool: DeleteRule::RunOn,
            ..reference
        },
        "py-sdk" => ServerPolicy {
            event_ids: EventIdScheme::PySdk,
            store: StoreScope::SharedByRequestId,
            unknown_id: Unhonourable::EmptyClosed,
            evicted_id: Unhonourable::EmptyClosed,
            priming: Priming { post: true, standalone: false, resume: true },
            idle_rule: IdleRule::NoOpenRequest,
            ..reference
        },
        "rmcp" => ServerPolicy {
            event_ids: EventIdScheme::Rmcp,
            retention: Retention { max_events: Some(16), window: None, drop_on_response: true },
            replay: ReplayRule::From,
            unknown_id: Unhonourable::EmptyClosed,
            evicted_id: Unhonourable::FromOldest,
            priming: Priming { post: true, standalone: false, resume: false },
            retry_ms: Some(3000),
            keepalive: Some(secs(15)),
            idle_ttl: Some(secs(300)),
            idle_rule: IdleRule::LastRequest,
            delete_unknown_status: 202,
            delete_status: 202,
            second_get: SecondGet::Accept,
            ..reference
        },
        // No sessions (so no expiry and no DELETE), no GET: nothing is kept for a resumption, no
        // priming event hands out a cursor, and the end of a POST's connection cancels its tool.
        // No keep-alives either, so an idle load balancer cuts a silent tool's stream.
        "stateless-2026" => ServerPolicy {
            retention: Retention { max_events: None, window: None, drop_on_response: true },
            priming: Priming { post: false, standalone: false, resume: false },
            idle_ttl: None,
            sessions: false,
            disconnect_cancels: true,
            ..reference
        },
        _ => return None,
    };
    Some(ServerPolicy { name: name.into(), ..p })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_profile_exists_and_carries_its_name() {
        for n in CLIENT_NAMES {
            assert_eq!(client(n).map(|p| p.name), Some(n.to_string()));
            assert!(!describe(n).is_empty());
        }
        for n in SERVER_NAMES {
            assert_eq!(server(n).map(|p| p.name), Some(n.to_string()));
            assert!(!describe(n).is_empty());
        }
        assert!(client("nope").is_none() && server("nope").is_none());
    }

    #[test]
    fn incident_profiles_differ_from_reference_where_the_note_says() {
        let (r, s) = (server("reference").unwrap(), server("silent-head").unwrap());
        assert_eq!(r.evicted_id, Unhonourable::Gone410);
        assert_eq!(s.evicted_id, Unhonourable::SilentHead);
        assert_eq!(s.retention.max_events, Some(100));
        assert_eq!(client("naive").unwrap().close_handling, CloseHandling::ReinitializeAndResend);
        assert_eq!(client("reference").unwrap().persistence, Persistence::Durable);
    }

    #[test]
    fn the_stateless_profiles_drop_sessions_resumption_and_keepalives() {
        let (c, s) = (client("stateless-2026").unwrap(), server("stateless-2026").unwrap());
        assert!(!c.sessions && !c.open_standalone_stream);
        assert_eq!(c.close_handling, CloseHandling::ReissueWithNewId);
        assert!(!s.sessions && s.disconnect_cancels);
        assert_eq!((s.priming.post, s.keepalive, s.idle_ttl), (false, None, None));
        for n in CLIENT_NAMES.iter().filter(|n| **n != "stateless-2026") {
            assert!(client(n).unwrap().sessions, "{n}");
        }
        for n in SERVER_NAMES.iter().filter(|n| **n != "stateless-2026") {
            let p = server(n).unwrap();
            assert!(p.sessions && !p.disconnect_cancels, "{n}");
        }
    }

    #[test]
    fn policies_written_before_the_stateless_fields_still_read_as_session_ful() {
        let mut old = serde_json::to_value(server("reference").unwrap()).unwrap();
        let fields = old.as_object_mut().unwrap();
        assert!(fields.remove("sessions").is_some() && fields.remove("disconnect_cancels").is_some());
        assert_eq!(serde_json::from_value::<ServerPolicy>(old).unwrap(), server("reference").unwrap());
        let mut old = serde_json::to_value(client("ts-sdk").unwrap()).unwrap();
        assert!(old.as_object_mut().unwrap().remove("sessions").is_some());
        assert_eq!(serde_json::from_value::<ClientPolicy>(old).unwrap(), client("ts-sdk").unwrap());
    }
}
