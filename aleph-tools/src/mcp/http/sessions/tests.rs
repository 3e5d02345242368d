//! The ledger's caps, sleep and wake, tried on their own.

use super::*;

fn limits(max_sessions: usize, max_per_identity: usize) -> SessionLimits {
    SessionLimits {
        idle_timeout: Duration::from_secs(10),
        max_sessions,
        max_per_identity,
    }
}

#[test]
fn caps_count_sessions_and_places_held() {
    let ledger = Ledger::new(limits(3, 2), None);
    let ann: Arc<str> = Arc::from("ann");
    let first = ledger.reserve(Some(Arc::clone(&ann))).unwrap();
    let id: SessionId = Arc::from("s1");
    ledger.opened(&id);
    ledger.initialized(&id, Some(Arc::clone(&ann)), None);
    drop(first);
    let _second = ledger.reserve(Some(Arc::clone(&ann))).unwrap();
    assert!(matches!(
        ledger.reserve(Some(Arc::clone(&ann))),
        Err(Full::Identity { limit: 2, .. })
    ));
    let _third = ledger.reserve(Some(Arc::from("bob"))).unwrap();
    assert!(matches!(
        ledger.reserve(None),
        Err(Full::Server { limit: 3 })
    ));
    ledger.closed(&id);
    assert!(ledger.reserve(Some(ann)).is_ok());
}

#[tokio::test]
async fn idle_sessions_sleep_then_end_and_busy_ones_do_not() {
    let ledger = Ledger::new(limits(10, 10), None);
    let (idle, used): (SessionId, SessionId) = (Arc::from("idle"), Arc::from("used"));
    for id in [&idle, &used] {
        ledger.opened(id);
        ledger.initialized(id, None, Some(InitializeRequestParams::default()));
    }
    let stream = ledger.busy(&used);
    let later = Instant::now() + Duration::from_secs(6);
    assert_eq!(ledger.due(later), [(idle.clone(), Due::Sleep)]);
    assert!(ledger.carry_out(&idle, Due::Sleep, later));
    assert!(ledger.due(later).is_empty(), "falling asleep");
    ledger.closed(&idle);
    assert_eq!(ledger.count(), SessionCount { held: 2, awake: 1 });
    assert!(ledger.to_wake(&idle).await.is_some());
    ledger.woke(&idle);
    let much_later = Instant::now() + Duration::from_secs(11);
    assert_eq!(ledger.due(much_later), [(idle.clone(), Due::End)]);
    ledger.touch(&idle);
    assert!(
        !ledger.carry_out(&idle, Due::End, Instant::now()),
        "used since it was found"
    );
    assert!(ledger.carry_out(&idle, Due::End, much_later));
    assert_eq!(ledger.count(), SessionCount { held: 1, awake: 1 });
    assert!(ledger.to_wake(&idle).await.is_none(), "ended");
    drop(stream);
    assert!(ledger.due(Instant::now()).is_empty(), "just used");
}

#[test]
fn a_session_with_nothing_to_resume_sleeps_sooner() {
    let ledger = Ledger::new(
        SessionLimits {
            idle_timeout: Duration::from_mins(5),
            max_sessions: 10,
            max_per_identity: 10,
        },
        None,
    );
    let ids: [SessionId; 3] = [Arc::from("answered"), Arc::from("bare"), Arc::from("cut")];
    let [answered, bare, cut] = ids.clone();
    for id in &ids {
        ledger.opened(id);
        ledger.initialized(id, None, Some(InitializeRequestParams::default()));
    }
    // A stream that ran to its end handed on every event it carried.
    let mut stream = ledger.busy(&answered);
    stream.used();
    stream.ended();
    drop(stream);
    // One cut short left events that rmcp keeps for a client that resumes the stream.
    let mut stream = ledger.busy(&cut);
    stream.used();
    drop(stream);
    // One that carried nothing left nothing.
    drop(ledger.busy(&bare));
    let due_at = |at: Instant| {
        let mut due = ledger.due(at);
        due.sort_by(|one, other| one.0.cmp(&other.0));
        due
    };
    assert!(ledger.due(Instant::now()).is_empty(), "just used");
    let soon = Instant::now() + QUIET + Duration::from_millis(100);
    assert_eq!(
        due_at(soon),
        [(answered.clone(), Due::Sleep), (bare.clone(), Due::Sleep)]
    );
    let later = Instant::now() + KEEP_AWAKE + Duration::from_millis(100);
    assert_eq!(
        due_at(later),
        [
            (answered, Due::Sleep),
            (bare, Due::Sleep),
            (cut, Due::Sleep)
        ]
    );
}
