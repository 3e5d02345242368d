//! Tools asking the client that called them: elicitation and sampling.
//!
//! A client that connected with the handshake gets requests of the server's own
//! (`elicitation/create`, `sampling/createMessage`) while the call waits. A 2026-07-28 client
//! takes no requests from servers: the call answers with an `input_required` result that
//! carries the questions, the tool waits on the server meanwhile, and the client's retry
//! (with `inputResponses` and the `requestState` it was given) hands the answers in and
//! carries the call on. MCP's 2026-07-28 revision deprecates sampling; clients of the
//! earlier revisions use it, so it is served.
#![allow(deprecated)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest,
    InputRequests, InputResponses,
};
use rmcp::{Peer, RoleServer};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::running::Running;
use crate::context::{
    AskResult, Elicitation, ElicitationHandler, ElicitationRequest, Sampled, SamplingHandler,
    SamplingMessage, SamplingRequest, SamplingRole,
};
use crate::result::Content;
use crate::tool::BoxFuture;
use crate::util::sync::lock;
use crate::{Identity, ToolContext, ToolResult};

/// How long a call may wait for a 2026-07-28 client to come back with its answers before it
/// is stopped.
const WAIT_FOR_ANSWERS: Duration = Duration::from_mins(10);
/// The most calls that may wait for answers at once, across every session of a server.
const MOST_WAITING: usize = 1024;

/// What the client said it can answer.
#[derive(Clone, Copy, Default)]
struct Abilities {
    elicit: bool,
    sample: bool,
}

impl Abilities {
    fn of(capabilities: Option<&ClientCapabilities>) -> Self {
        capabilities.map_or_else(Self::default, |caps| Self {
            elicit: caps.elicitation.is_some(),
            sample: caps.sampling.is_some(),
        })
    }

    fn check_elicit(self) -> AskResult<()> {
        if self.elicit {
            Ok(())
        } else {
            Err(
                "the client cannot ask its user: it did not declare the `elicitation` capability"
                    .into(),
            )
        }
    }

    fn check_sample(self) -> AskResult<()> {
        if self.sample {
            Ok(())
        } else {
            Err("the client cannot run its model for tools: it did not declare the `sampling` capability".into())
        }
    }
}

/// Gives a call's context the client as the one who answers.
pub(super) fn ask_the_peer(ctx: ToolContext, peer: &Peer<RoleServer>) -> ToolContext {
    let asker = Arc::new(PeerAsker { peer: peer.clone() });
    ctx.with_askers(asker.clone(), asker)
}

/// Asks a client that connected with the handshake, with requests of the server's own.
struct PeerAsker {
    peer: Peer<RoleServer>,
}

impl PeerAsker {
    fn abilities(&self) -> Abilities {
        let info = self.peer.peer_info();
        Abilities::of(info.as_ref().map(|info| &info.capabilities))
    }
}

impl ElicitationHandler for PeerAsker {
    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, AskResult<Elicitation>> {
        Box::pin(async move {
            self.abilities().check_elicit()?;
            let answer = self
                .peer
                .create_elicitation(elicit_params(&request)?)
                .await?;
            elicitation_from_mcp(answer)
        })
    }
}

impl SamplingHandler for PeerAsker {
    fn sample(&self, request: SamplingRequest) -> BoxFuture<'_, AskResult<Sampled>> {
        Box::pin(async move {
            self.abilities().check_sample()?;
            let answer = self.peer.create_message(sampling_params(request)?).await?;
            sampled_from_mcp(&answer)
        })
    }
}

/// A question a call waits on, for the next `input_required` result.
struct Ask {
    request: InputRequest,
    answer: oneshot::Sender<Value>,
}

/// Asks a 2026-07-28 client: each question goes out in the call's next `input_required`
/// result, and its answer comes back with the client's retry.
struct RoundAsker {
    abilities: Abilities,
    asks: mpsc::UnboundedSender<Ask>,
}

impl RoundAsker {
    async fn ask(&self, request: InputRequest) -> AskResult<Value> {
        let (answer, answered) = oneshot::channel();
        self.asks
            .send(Ask { request, answer })
            .map_err(|_| "the call no longer waits for answers")?;
        match tokio::time::timeout(WAIT_FOR_ANSWERS, answered).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err("the call stopped waiting for the client's answer".into()),
            Err(_) => Err("the client did not come back with an answer in time".into()),
        }
    }
}

impl ElicitationHandler for RoundAsker {
    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, AskResult<Elicitation>> {
        Box::pin(async move {
            self.abilities.check_elicit()?;
            let request = InputRequest::Elicitation(ElicitRequest::new(elicit_params(&request)?));
            let answer: ElicitResult =
                serde_json::from_value(self.ask(request).await?).map_err(|err| {
                    format!("the client's answer is not an elicitation result: {err}")
                })?;
            elicitation_from_mcp(answer)
        })
    }
}

impl SamplingHandler for RoundAsker {
    fn sample(&self, request: SamplingRequest) -> BoxFuture<'_, AskResult<Sampled>> {
        Box::pin(async move {
            self.abilities.check_sample()?;
            let request =
                InputRequest::CreateMessage(CreateMessageRequest::new(sampling_params(request)?));
            let answer: CreateMessageResult = serde_json::from_value(self.ask(request).await?)
                .map_err(|err| format!("the client's answer is not a sampling result: {err}"))?;
            sampled_from_mcp(&answer)
        })
    }
}

/// A call of a 2026-07-28 client, which asks its questions in rounds.
pub(super) struct RoundCall {
    /// The tool as the client named it.
    pub(super) tool: String,
    /// The call itself; it runs on its own task once it waits for answers.
    work: BoxFuture<'static, ToolResult>,
    /// Questions the tool asks.
    asks: mpsc::UnboundedReceiver<Ask>,
    /// Questions sent to the client and not answered yet, by key.
    open: BTreeMap<String, (InputRequest, oneshot::Sender<Value>)>,
    /// Numbers the questions.
    asked: u64,
    /// Stops the call's task when the client does not come back.
    abort: Option<tokio::task::AbortHandle>,
    /// The call's own cancellation: a request that carries it on may be cancelled, but the
    /// requests before it ended without cancelling it.
    cancel: CancellationToken,
    /// Who started the call, when the server authenticates; only they may carry it on.
    owner: Option<String>,
    /// Keeps a draining server waiting for this call (see [`counted`](Self::counted)).
    counted: Option<Running>,
}

/// Where a round ended.
pub(super) enum Round {
    /// The call finished.
    Done(ToolResult),
    /// The call waits for answers to these questions.
    Asks(InputRequests),
}

impl RoundCall {
    /// Prepares a call that asks `capabilities`' client in rounds; `run` gets the context
    /// to run the tool with and returns the call.
    pub(super) fn new(
        tool: String,
        ctx: ToolContext,
        capabilities: Option<&ClientCapabilities>,
        run: impl FnOnce(ToolContext) -> BoxFuture<'static, ToolResult>,
    ) -> Self {
        let (sender, asks) = mpsc::unbounded_channel();
        let asker = Arc::new(RoundAsker {
            abilities: Abilities::of(capabilities),
            asks: sender,
        });
        let cancel = CancellationToken::new();
        let owner = ctx.identity().map(|who| who.subject().to_owned());
        let ctx = ctx
            .with_cancellation(cancel.clone())
            .with_askers(asker.clone(), asker);
        Self {
            tool,
            work: run(ctx),
            asks,
            open: BTreeMap::new(),
            asked: 0,
            abort: None,
            cancel,
            owner,
            counted: None,
        }
    }

    /// Counted as running by `running` until the call ends or is given up, across the
    /// requests that carry it on: a draining server waits for a call parked for its
    /// client's answers.
    #[must_use]
    pub(super) fn counted(mut self, running: Running) -> Self {
        self.counted = Some(running);
        self
    }

    /// Hands in the client's answers; those to questions not asked are ignored.
    pub(super) fn answer(&mut self, responses: InputResponses) {
        for (key, value) in responses {
            if let Some((_, answer)) = self.open.remove(&key) {
                let _ = answer.send(value);
            }
        }
    }

    /// Cancels the call and forgets the questions the client has not answered. The tool
    /// sees the cancellation first, so the call ends as cancelled rather than as a failed
    /// question.
    pub(super) fn stop(&mut self) {
        self.cancel.cancel();
        self.open.clear();
    }

    /// Runs the call until it finishes or waits for answers the client has not given;
    /// cancelling `request` (the one this round answers) cancels the call.
    pub(super) async fn round(&mut self, request: &CancellationToken) -> Round {
        if !self.open.is_empty() {
            // The client left questions unanswered: ask them again.
            return Round::Asks(self.open_requests());
        }
        loop {
            tokio::select! {
                biased;
                result = &mut self.work => return Round::Done(result),
                Some(ask) = self.asks.recv() => {
                    self.open_question(ask);
                    // Questions asked together go out together.
                    while let Ok(ask) = self.asks.try_recv() {
                        self.open_question(ask);
                    }
                    return Round::Asks(self.open_requests());
                }
                () = request.cancelled(), if !self.cancel.is_cancelled() => self.cancel.cancel(),
            }
        }
    }

    fn open_question(&mut self, ask: Ask) {
        self.asked += 1;
        let kind = match &ask.request {
            InputRequest::CreateMessage(_) => "sampling",
            _ => "elicitation",
        };
        let key = format!("{kind}-{}", self.asked);
        self.open.insert(key, (ask.request, ask.answer));
    }

    fn open_requests(&self) -> InputRequests {
        self.open
            .iter()
            .map(|(key, (request, _))| (key.clone(), request.clone()))
            .collect()
    }

    /// Moves the call onto a task of its own, so it keeps running while nobody awaits it.
    fn detach(&mut self) {
        if self.abort.is_some() {
            return;
        }
        let work = std::mem::replace(&mut self.work, Box::pin(std::future::pending()));
        let task = tokio::spawn(work);
        self.abort = Some(task.abort_handle());
        self.work = Box::pin(async move {
            task.await.unwrap_or_else(|err| {
                ToolResult::err(
                    &crate::ToolError::Execution(format!("the call stopped: {err}")),
                    Duration::ZERO,
                )
            })
        });
    }
}

/// The calls that wait for a 2026-07-28 client to come back with answers, by the
/// `requestState` each was given. Shared by every session of a server, since each of those
/// requests may come on a connection of its own.
#[derive(Default)]
pub(super) struct Waiting {
    calls: std::sync::Mutex<HashMap<String, (Instant, RoundCall)>>,
}

impl Waiting {
    /// Keeps `call` until the client comes back; returns the `requestState` that finds it,
    /// or `None` when too many calls wait already (the call is stopped).
    pub(super) fn park(&self, mut call: RoundCall) -> Option<String> {
        call.detach();
        let mut calls = lock(&self.calls);
        forget_stale(&mut calls);
        if calls.len() >= MOST_WAITING {
            if let Some(abort) = &call.abort {
                abort.abort();
            }
            return None;
        }
        // Random: a client cannot come back as another's call.
        let state = uuid::Uuid::new_v4().simple().to_string();
        calls.insert(state.clone(), (Instant::now(), call));
        Some(state)
    }

    /// The call `state` names, taken out while its round runs.
    ///
    /// # Errors
    ///
    /// What the client must fix: no call waits under `state`, or it is a call of another
    /// tool than `tool` (that call keeps waiting).
    pub(super) fn take(
        &self,
        state: &str,
        tool: &str,
        caller: Option<&Identity>,
    ) -> Result<RoundCall, String> {
        let mut calls = lock(&self.calls);
        forget_stale(&mut calls);
        match calls.get(state) {
            None => Err(
                "no call waits for this `requestState`: it finished, waited too long, or was started on another server process; call the tool again"
                    .to_owned(),
            ),
            Some((_, call)) if call.tool != tool => Err(format!(
                "this `requestState` belongs to a call of `{}`, not `{tool}`",
                call.tool
            )),
            Some((_, call)) if call.owner.as_deref() != caller.map(Identity::subject) => Err(
                "this `requestState` belongs to a call another identity started".to_owned(),
            ),
            Some(_) => Ok(calls.remove(state).expect("just found").1),
        }
    }
}

/// Stops and forgets the calls whose clients did not come back in time.
fn forget_stale(calls: &mut HashMap<String, (Instant, RoundCall)>) {
    calls.retain(|_, (since, call)| {
        let keep = since.elapsed() < WAIT_FOR_ANSWERS;
        if !keep && let Some(abort) = &call.abort {
            abort.abort();
        }
        keep
    });
}

fn elicit_params(request: &ElicitationRequest) -> AskResult<ElicitRequestParams> {
    serde_json::from_value(json!({
        "mode": "form",
        "message": request.message,
        "requestedSchema": request.schema,
    }))
    .map_err(|err| format!("the form cannot be sent over MCP: {err}").into())
}

fn elicitation_from_mcp(answer: ElicitResult) -> AskResult<Elicitation> {
    Ok(match answer.action {
        ElicitationAction::Accept => match answer.content {
            Some(Value::Object(fields)) => Elicitation::Accept(fields),
            None | Some(Value::Null) => Elicitation::Accept(Map::new()),
            Some(other) => {
                return Err(
                    format!("the client accepted with {other}, not an object of fields").into(),
                );
            }
        },
        ElicitationAction::Decline => Elicitation::Decline,
        _ => Elicitation::Cancel,
    })
}

fn sampling_params(request: SamplingRequest) -> AskResult<CreateMessageRequestParams> {
    let mut params = json!({
        "messages": request.messages,
        "maxTokens": request.max_tokens,
    });
    let fields = params.as_object_mut().expect("an object");
    if let Some(prompt) = request.system_prompt {
        fields.insert("systemPrompt".to_owned(), prompt.into());
    }
    if let Some(temperature) = request.temperature {
        fields.insert("temperature".to_owned(), temperature.into());
    }
    if !request.stop_sequences.is_empty() {
        fields.insert("stopSequences".to_owned(), request.stop_sequences.into());
    }
    if !request.model_hints.is_empty() {
        let hints: Vec<Value> = request
            .model_hints
            .into_iter()
            .map(|name| json!({ "name": name }))
            .collect();
        fields.insert("modelPreferences".to_owned(), json!({ "hints": hints }));
    }
    serde_json::from_value(params).map_err(|err| {
        format!("the request cannot be sent over MCP (sampling messages hold text, images and sounds): {err}").into()
    })
}

fn sampled_from_mcp(answer: &CreateMessageResult) -> AskResult<Sampled> {
    let message = serde_json::to_value(&answer.message)?;
    let blocks = match message.get("content") {
        Some(Value::Array(blocks)) => blocks.clone(),
        Some(block) => vec![block.clone()],
        None => Vec::new(),
    };
    let content = blocks
        .into_iter()
        // A block a tool result cannot hold (a tool call the model made) reads as its JSON.
        .map(|block| {
            serde_json::from_value(block.clone())
                .unwrap_or_else(|_| Content::text(block.to_string()))
        })
        .collect();
    Ok(Sampled {
        model: answer.model.clone(),
        content,
        stop_reason: answer.stop_reason.clone(),
    })
}

/// A wrapped server's request for a completion, as a handler takes it.
pub(super) fn sampling_from_mcp(
    params: &CreateMessageRequestParams,
) -> Result<SamplingRequest, String> {
    let wire = serde_json::to_value(params).map_err(|err| err.to_string())?;
    let mut messages = Vec::new();
    for message in wire["messages"].as_array().into_iter().flatten() {
        let blocks = match &message["content"] {
            Value::Array(blocks) => blocks.clone(),
            block => vec![block.clone()],
        };
        for block in blocks {
            let content: Content = serde_json::from_value(block).map_err(|err| {
                format!("a sampling message holds what a tool cannot pass on: {err}")
            })?;
            messages.push(SamplingMessage {
                role: match message["role"].as_str() {
                    Some("assistant") => SamplingRole::Assistant,
                    _ => SamplingRole::User,
                },
                content,
            });
        }
    }
    let mut request = SamplingRequest::from_messages(messages).with_max_tokens(params.max_tokens);
    request.system_prompt.clone_from(&params.system_prompt);
    request.temperature = params.temperature;
    request.stop_sequences = params.stop_sequences.clone().unwrap_or_default();
    request.model_hints = params
        .model_preferences
        .iter()
        .flat_map(|preferences| preferences.hints.iter().flatten())
        .filter_map(|hint| hint.name.clone())
        .collect();
    Ok(request)
}

/// A handler's answer, as the wrapped server that asked takes it.
pub(super) fn sampled_to_mcp(answer: &Sampled) -> Result<CreateMessageResult, String> {
    let content = match answer.content.as_slice() {
        [one] => serde_json::to_value(one),
        many => serde_json::to_value(many),
    }
    .map_err(|err| err.to_string())?;
    serde_json::from_value(json!({
        "role": "assistant",
        "content": content,
        "model": answer.model,
        "stopReason": answer.stop_reason,
    }))
    .map_err(|err| {
        format!("the answer cannot be sent over MCP (it holds text, images and sounds): {err}")
    })
}
