//! What a client subscribes to stays with its session, asleep or awake, so it is bounded: a
//! resource template takes any URI of its form, and without a cap one client could grow its
//! session's record without end.

use aleph_tools::mcp::rmcp::ServiceExt as _;
use aleph_tools::mcp::rmcp::model::{
    ReadResourceRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use aleph_tools::mcp::rmcp::service::ServiceError;
use aleph_tools::mcp::{McpResourceTemplate, McpServer};
use aleph_tools::{AlephToolServer, ResourceContents};

/// A session holds at most 1,024 subscriptions, of at most 64 KiB of URI together: a
/// template serves any URI of its form, and what a client subscribes to is kept while its
/// session sleeps. Past either cap a subscription is refused, saying so, and the session
/// serves on; a URI already held, and one subscribed to after an unsubscription, are taken.
/// (`resources/subscribe` belongs to the revisions with the handshake, so rmcp's client
/// sends it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(deprecated)]
async fn a_session_holds_a_bounded_set_of_subscriptions() {
    let tools = AlephToolServer::new();
    let notes =
        McpResourceTemplate::new("memo://notes/{name}", "notes", |uri, _params| async move {
            Ok(vec![ResourceContents::text(uri, "text/plain", "a note")])
        })
        .expect("a template");
    let mcp = McpServer::new(&tools).with_resources(notes);
    let connect = || async {
        let (client, ours) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(ours);
        tokio::spawn(mcp.clone().serve(read, write));
        ().serve(tokio::io::split(client))
            .await
            .expect("the server answers")
    };
    let refusal = |answer: Result<(), ServiceError>| match answer {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code.0, -32602, "{error:?}");
            assert!(
                error.message.contains("at most 1024 subscriptions")
                    && error.message.contains("`resources/unsubscribe`"),
                "{}",
                error.message
            );
            error.message.into_owned()
        }
        other => panic!("refused, not {other:?}"),
    };

    let client = connect().await;
    let note = |n: usize| format!("memo://notes/{n}");
    for n in 0..1024 {
        let answer = client.subscribe(SubscribeRequestParams::new(note(n))).await;
        assert!(answer.is_ok(), "subscription {n}: {answer:?}");
    }
    let subscribe = |uri: String| client.subscribe(SubscribeRequestParams::new(uri));
    refusal(subscribe(note(1024)).await);
    subscribe(note(7))
        .await
        .expect("a URI already held is taken");
    client
        .unsubscribe(UnsubscribeRequestParams::new(note(7)))
        .await
        .expect("unsubscribed");
    subscribe(note(1024)).await.expect("taken in the room made");
    refusal(subscribe(note(1025)).await);

    // Three URIs of 20,014 bytes fit in 64 KiB; a fourth does not.
    let client = connect().await;
    let long = |n: usize| format!("memo://notes/{n}{}", "x".repeat(20_000));
    for n in 0..3 {
        let answer = client.subscribe(SubscribeRequestParams::new(long(n))).await;
        assert!(answer.is_ok(), "long subscription {n}: {answer:?}");
    }
    let message = refusal(client.subscribe(SubscribeRequestParams::new(long(3))).await);
    assert!(message.contains("60042 bytes of URI"), "{message}");
    assert!(message.len() < 1_000, "the URI is shortened: {message}");
    let read = client
        .read_resource(ReadResourceRequestParams::new("memo://notes/short"))
        .await
        .expect("the session serves on");
    let read = serde_json::to_value(&read.contents).expect("JSON");
    assert_eq!(read[0]["text"], "a note", "{read}");
}
