//! Middleware: audit logging with redaction, rate and concurrency limits, a capability
//! check, a layer of your own, and layers added while the server runs.
//!
//! Run with `cargo run -p guide-examples --bin middleware`.

use std::sync::Arc;
use std::time::Instant;

use aleph_tools::middleware::{
    self, Audit, ConcurrencyLimit, Layer, Next, ObservedCall, Permission, Priority, Rate,
    RateLimit, ToolCall,
};
use aleph_tools::prelude::*;
use serde_json::json;

/// Send an email.
#[tool(register = false, tags = ["outbound"])]
fn send_email(to: String, subject: String, smtp_password: String) -> String {
    let _ = smtp_password;
    format!("sent `{subject}` to {to}")
}

/// Look up a word.
#[tool(register = false)]
fn define(word: String) -> String {
    format!("{word}: a word")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_target(false)
        .without_time()
        .init();

    let server = AlephToolServer::builder()
        .with_tool(SendEmailTool)
        .with_tool(DefineTool)
        // Outermost first: every call is audited, even refused ones; a call refused for
        // want of a capability does not use up the rate.
        .with_middleware(Audit::new())
        .with_middleware(Permission::new().require_for_tag("email:send", "outbound"))
        .with_middleware(RateLimit::new().tool("send_email", Rate::per_minute(2)))
        .with_middleware(ConcurrencyLimit::new().global(16))
        .with_middleware(middleware::from_fn(
            |call: ToolCall, next: Next| async move {
                let started = Instant::now();
                let name = call.name().to_owned();
                let outcome = next.run(call).await;
                println!("  [timing] {name} took {:?}", started.elapsed());
                outcome
            },
        ))
        .build()?;

    // Layers added at run time: a resolver that answers some calls from a cache, and an
    // observer told of every outcome.
    server.add_layer(Layer::resolver(Priority::Normal, |call: &ToolCall| {
        let cached = call.arguments()["word"] == "hello";
        async move { cached.then(|| ToolOutput::text("hello: a greeting (cached)")) }
    }));
    server.add_layer(Layer::observer(
        Priority::Low,
        |call: Arc<ObservedCall>| async move {
            println!(
                "  [observer] {} finished, ok = {}",
                call.tool,
                call.outcome.is_ok()
            );
            Ok(())
        },
    ));

    let email = json!({ "to": "ada@example.com", "subject": "hi", "smtp_password": "hunter2" });
    let refused = server.call("send_email", email.clone()).await;
    println!("without the capability: {}", refused.model_text());
    assert!(!refused.success);

    let allowed = ToolContext::new().with_capabilities(["email:send"]);
    for attempt in 1..=3 {
        let result = server
            .call("send_email", email.clone())
            .context(allowed.clone())
            .await;
        println!("send #{attempt}: {}", result.model_text());
        assert_eq!(result.success, attempt <= 2);
    }

    let cached = server.call("define", json!({ "word": "hello" })).await;
    println!("define hello: {}", cached.model_text());
    let fresh = server.call("define", json!({ "word": "tool" })).await;
    println!("define tool: {}", fresh.model_text());
    // Give the observers' tasks a moment to print.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    Ok(())
}
