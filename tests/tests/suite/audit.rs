//! The audit layer's `tracing` output: a span per call, start and end events, secrets
//! redacted at any depth.

use aleph_tools::middleware::{Audit, REDACTED};
use aleph_tools::prelude::*;
use aleph_tools_tests::logs::Captured;
use serde_json::json;

/// Log in somewhere.
#[tool(register = false)]
fn login(user: String, password: String, options: serde_json::Value) -> String {
    let _ = (password, options);
    format!("welcome {user}")
}

/// Always fails.
#[tool(register = false)]
fn broken() -> Result<(), String> {
    Err("the disk is full".to_owned())
}

#[tokio::test]
async fn every_call_is_recorded_with_secrets_redacted() {
    let (captured, _guard) = Captured::capture();
    let s = AlephToolServer::builder()
        .with_tool(LoginTool)
        .with_tool(BrokenTool)
        .with_middleware(Audit::new().redact(["*ssn*"]).unwrap())
        .build()
        .unwrap();
    let ok = s
        .call(
            "login",
            json!({
                "user": "ada",
                "password": "hunter2",
                "options": { "API_KEY": "sk-123", "nested": [{ "user_ssn": "000-00" }], "theme": "dark" }
            }),
        )
        .await;
    assert!(ok.success);
    assert!(!s.call("broken", json!({})).await.success);
    let log = captured.text();
    for secret in ["hunter2", "sk-123", "000-00"] {
        assert!(
            !log.contains(secret),
            "`{secret}` leaked into the log:\n{log}"
        );
    }
    for needle in [
        "tool_call{tool=\"login\" call_id=1 caller=Human}",
        "tool call started",
        &format!("\"password\":\"{REDACTED}\""),
        &format!("\"API_KEY\":\"{REDACTED}\""),
        &format!("\"user_ssn\":\"{REDACTED}\""),
        "\"theme\":\"dark\"",
        "\"user\":\"ada\"",
        "tool call succeeded",
        "tool_call{tool=\"broken\" call_id=2 caller=Human}",
        "WARN",
        "tool call failed",
        "error_kind=Execution",
        "error=the disk is full",
    ] {
        assert!(log.contains(needle), "the log lacks `{needle}`:\n{log}");
    }
}

#[test]
fn redaction_can_be_inspected_and_bad_patterns_are_refused() {
    let audit = Audit::new();
    assert_eq!(
        audit.redacted(&json!({ "Authorization": "Bearer x", "list": [{ "refresh_token": "y" }] })),
        json!({ "Authorization": REDACTED, "list": [{ "refresh_token": REDACTED }] })
    );
    let err = Audit::new().redact(["{a"]).unwrap_err();
    assert!(err.to_string().contains("`{a`"), "{err}");
}
