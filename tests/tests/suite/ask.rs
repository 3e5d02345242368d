//! Tools asking the user (`ToolContext::elicit`, `elicit_form`) and the client's model
//! (`ToolContext::sample`), answered in process by the server's handlers or a call's own.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use aleph_tools::prelude::*;
use aleph_tools::{Elicitation, ElicitationRequest, Sampled, SamplingRequest, SamplingRole};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

#[derive(Deserialize, JsonSchema)]
struct Booking {
    /// Guest's name
    guest: String,
    /// Nights to stay
    nights: u8,
    /// Breakfast included
    #[serde(default)]
    breakfast: bool,
}

/// Books a room, asking the guest for the details.
#[tool(register = false)]
async fn book(hotel: String, ctx: &ToolContext) -> Result<String, ToolError> {
    let message = format!("Book a room at {hotel}?");
    Ok(match ctx.elicit::<Booking>(message).await? {
        Elicitation::Accept(Booking {
            guest,
            nights,
            breakfast,
        }) => format!("{guest}: {nights} nights, breakfast {breakfast}"),
        Elicitation::Decline => "declined".to_owned(),
        Elicitation::Cancel => "cancelled".to_owned(),
    })
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Nested {
    address: Address,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Address {
    street: String,
}

/// Asks for a form no client can show.
#[tool(register = false)]
async fn nested(ctx: &ToolContext) -> Result<String, ToolError> {
    ctx.elicit::<Nested>("Where?").await?;
    Ok("asked".to_owned())
}

/// Asks with a hand-written form.
#[tool(register = false)]
async fn pick(form: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
    let answer = ctx.elicit_form("Pick one", &form).await?;
    Ok(json!({ "action": answer.action(), "content": answer.accepted() }))
}

/// Asks the model to name something.
#[tool(register = false)]
async fn name_it(thing: String, ctx: &ToolContext) -> Result<String, ToolError> {
    let request = SamplingRequest::new(format!("Name {thing}"))
        .with_system_prompt("One word.")
        .with_temperature(0.5)
        .with_stop_sequence("\n")
        .with_model_hint("small");
    let answer = ctx.sample(request).await?;
    Ok(format!("{} ({})", answer.text(), answer.model))
}

fn answering(
    answer: impl Fn(&ElicitationRequest) -> Elicitation + Send + Sync + 'static,
) -> AlephToolServer {
    let answer = Arc::new(answer);
    AlephToolServer::builder()
        .with_tool(BookTool)
        .with_tool(NestedTool)
        .with_tool(PickTool)
        .with_elicitation_handler(move |request: ElicitationRequest| {
            let answer = Arc::clone(&answer);
            async move { Ok(answer(&request)) }
        })
        .build()
        .unwrap()
}

fn fields(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(fields) => fields,
        other => panic!("not an object: {other}"),
    }
}

#[tokio::test]
async fn the_handler_sees_the_form_and_its_answer_reaches_the_tool() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let server = answering(move |request| {
        log.lock().unwrap().push(request.clone());
        Elicitation::Accept(fields(json!({ "guest": "Ada", "nights": 2 })))
    });
    let result = server.call("book", json!({ "hotel": "Ritz" })).await;
    assert_eq!(
        result.output, "Ada: 2 nights, breakfast false",
        "{result:?}"
    );

    let seen = seen.lock().unwrap();
    let [request] = seen.as_slice() else {
        panic!("asked {} times", seen.len())
    };
    assert_eq!(request.tool, "book");
    assert_eq!(request.message, "Book a room at Ritz?");
    assert_ne!(request.call_id, 0);
    assert_eq!(
        request.schema,
        json!({
            "type": "object",
            "properties": {
                "guest": { "type": "string", "description": "Guest's name" },
                "nights": { "type": "integer", "description": "Nights to stay", "minimum": 0, "maximum": 255 },
                "breakfast": { "type": "boolean", "description": "Breakfast included", "default": false }
            },
            "required": ["guest", "nights"]
        })
    );
}

#[tokio::test]
async fn declining_and_cancelling_reach_the_tool() {
    let server = answering(|_| Elicitation::Decline);
    assert_eq!(
        server.call("book", json!({"hotel": "x"})).await.output,
        "declined"
    );
    let server = answering(|_| Elicitation::Cancel);
    assert_eq!(
        server.call("book", json!({"hotel": "x"})).await.output,
        "cancelled"
    );
}

#[tokio::test]
async fn an_answer_that_does_not_fit_is_the_tools_error_and_the_server_serves_on() {
    let server =
        answering(|_| Elicitation::Accept(fields(json!({ "guest": "Ada", "nights": -1 }))));
    let result = server.call("book", json!({ "hotel": "x" })).await;
    assert!(!result.success);
    let message = result.model_text();
    assert!(
        message.contains("`book`: the user's answer does not fit") && message.contains("-1"),
        "{message}"
    );
    let result = server
        .call(
            "pick",
            json!({ "form": { "type": "object", "properties": {} } }),
        )
        .await;
    assert!(result.success, "{result:?}");
}

#[tokio::test]
async fn a_form_no_client_can_show_is_refused_before_anyone_is_asked() {
    let asked = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&asked);
    let server = answering(move |_| {
        count.fetch_add(1, Ordering::SeqCst);
        Elicitation::Cancel
    });
    let result = server.call("nested", json!({})).await;
    let message = result.model_text();
    assert!(
        message.contains("cannot be a form: field `address` is an object"),
        "{message}"
    );

    let free_list = json!({ "type": "object", "properties": { "tags": { "type": "array", "items": { "type": "string" } } } });
    let result = server.call("pick", json!({ "form": free_list })).await;
    assert!(
        result
            .model_text()
            .contains("field `tags` is a list of free values"),
        "{result:?}"
    );
    let result = server.call("pick", json!({ "form": "not a schema" })).await;
    assert!(
        result.model_text().contains("must be a JSON object"),
        "{result:?}"
    );
    assert_eq!(asked.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_hand_written_form_keeps_titled_choices() {
    let seen = Arc::new(std::sync::Mutex::new(Value::Null));
    let log = Arc::clone(&seen);
    let server = answering(move |request| {
        *log.lock().unwrap() = request.schema.clone();
        Elicitation::Accept(fields(json!({ "size": "l" })))
    });
    let form = json!({
        "type": "object",
        "properties": {
            "size": { "type": "string", "oneOf": [{ "const": "s", "title": "Small" }, { "const": "l", "title": "Large" }], "pattern": "^." }
        },
        "required": ["size"]
    });
    let result = server.call("pick", json!({ "form": form })).await;
    assert_eq!(
        result.output,
        json!({ "action": "accept", "content": { "size": "l" } })
    );
    let mut expected = form.clone();
    expected["properties"]["size"]
        .as_object_mut()
        .unwrap()
        .remove("pattern");
    assert_eq!(*seen.lock().unwrap(), expected);
}

#[tokio::test]
async fn without_anyone_to_ask_the_tool_hears_what_to_set_up() {
    let server = AlephToolServer::builder()
        .with_tool(BookTool)
        .with_tool(NameItTool)
        .build()
        .unwrap();
    let result = server.call("book", json!({ "hotel": "x" })).await;
    assert!(
        result
            .model_text()
            .contains("give the server an ElicitationHandler"),
        "{result:?}"
    );
    let result = server.call("name_it", json!({ "thing": "a cat" })).await;
    assert!(
        result
            .model_text()
            .contains("give the server a SamplingHandler"),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_failing_handler_fails_the_call_with_its_reason() {
    let server = AlephToolServer::builder()
        .with_tool(BookTool)
        .with_elicitation_handler(|_: ElicitationRequest| async {
            Err::<Elicitation, _>("the terminal is closed".into())
        })
        .build()
        .unwrap();
    let result = server.call("book", json!({ "hotel": "x" })).await;
    assert!(
        result
            .model_text()
            .contains("asking the user failed: the terminal is closed"),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_calls_own_handler_answers_instead_of_the_servers() {
    let server = answering(|_| Elicitation::Decline);
    let ctx = ToolContext::new().with_elicitation_handler(|_: ElicitationRequest| async {
        Ok(Elicitation::Accept(fields(
            json!({ "guest": "Lin", "nights": 1, "breakfast": true }),
        )))
    });
    let result = server
        .call("book", json!({ "hotel": "x" }))
        .context(ctx)
        .await;
    assert_eq!(result.output, "Lin: 1 nights, breakfast true");
}

/// Books a room through the hotel's own server, passing this call's context on.
#[tool(register = false)]
async fn book_through(hotel: String, ctx: &ToolContext, desk: State<AlephToolServer>) -> String {
    let result = desk
        .call("book", json!({ "hotel": hotel }))
        .context(ctx.clone())
        .await;
    result.model_text().into_owned()
}

#[tokio::test]
async fn a_context_passed_to_another_server_is_answered_by_that_servers_handler() {
    let desk = answering(|_| Elicitation::Accept(fields(json!({ "guest": "Desk", "nights": 3 }))));
    let front = AlephToolServer::builder()
        .with_tool(BookThroughTool)
        .with_state(desk)
        .with_elicitation_handler(|_: ElicitationRequest| async { Ok(Elicitation::Decline) })
        .build()
        .unwrap();
    let result = front.call("book_through", json!({ "hotel": "x" })).await;
    assert_eq!(result.output, "Desk: 3 nights, breakfast false");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_each_get_their_own_answer() {
    let server = answering(|request| {
        let guest = request
            .message
            .trim_start_matches("Book a room at ")
            .trim_end_matches('?');
        Elicitation::Accept(fields(json!({ "guest": guest, "nights": 1 })))
    });
    let calls = (0..32).map(|i| {
        let server = server.clone();
        tokio::spawn(async move {
            server
                .call("book", json!({ "hotel": format!("h{i}") }))
                .await
        })
    });
    for (i, call) in calls.enumerate() {
        let result = call.await.unwrap();
        assert_eq!(result.output, format!("h{i}: 1 nights, breakfast false"));
    }
}

#[tokio::test]
async fn the_sampling_handler_gets_the_request_and_its_answer_reaches_the_tool() {
    let seen = Arc::new(std::sync::Mutex::new(None));
    let log = Arc::clone(&seen);
    let server = AlephToolServer::builder()
        .with_tool(NameItTool)
        .with_sampling_handler(move |request: SamplingRequest| {
            *log.lock().unwrap() = Some(request);
            async { Ok(Sampled::new("tiny-model", "Whiskers").with_stop_reason("endTurn")) }
        })
        .build()
        .unwrap();
    let result = server.call("name_it", json!({ "thing": "a cat" })).await;
    assert_eq!(result.output, "Whiskers (tiny-model)");
    let request = seen.lock().unwrap().take().expect("the handler was asked");
    assert_eq!(request.tool, "name_it");
    assert_ne!(request.call_id, 0);
    assert_eq!(request.messages.len(), 1);
    assert_eq!(request.messages[0].role, SamplingRole::User);
    assert_eq!(request.messages[0].content.as_text(), Some("Name a cat"));
    assert_eq!(request.system_prompt.as_deref(), Some("One word."));
    assert_eq!(request.max_tokens, 1024);
    assert_eq!(request.temperature, Some(0.5));
    assert_eq!(request.stop_sequences, ["\n"]);
    assert_eq!(request.model_hints, ["small"]);
}
