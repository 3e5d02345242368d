//! Asking the user for structured input while a tool runs: MCP's elicitation, answered by
//! the client over MCP or by the application's [`ElicitationHandler`] in process.

use std::error::Error;
use std::future::Future;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::ToolContext;
use crate::error::ToolError;
use crate::schema::{Dialect, schema_for};
use crate::util::BoxFuture;

/// What a handler answers, or why it could not.
pub type AskResult<T> = Result<T, Box<dyn Error + Send + Sync>>;

/// A tool's question to the user: a message and the form to fill in.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// The tool asking.
    pub tool: String,
    /// The server-assigned id of the call that asks.
    pub call_id: u64,
    /// What to tell the user: why the tool asks, what it needs.
    pub message: String,
    /// The form, as MCP's restricted JSON Schema: an object whose properties are strings
    /// (with an optional `format` of `email`, `uri`, `date` or `date-time`), numbers,
    /// integers, booleans, single-select enums of strings (`enum`, or `oneOf` of
    /// `const`/`title`) and multi-select arrays of such enums. Properties may carry `title`,
    /// `description` and `default`.
    pub schema: Value,
}

/// The user's answer to an [`ElicitationRequest`].
///
/// `T` is what an accepted form holds: the fields as JSON for a handler, the tool's own type
/// for [`ToolContext::elicit`](super::ToolContext::elicit).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", content = "content", rename_all = "lowercase")]
pub enum Elicitation<T = Map<String, Value>> {
    /// The user filled in the form and sent it.
    Accept(T),
    /// The user said no.
    Decline,
    /// The user dismissed the question without choosing.
    Cancel,
}

impl<T> Elicitation<T> {
    /// What the user sent, if they accepted.
    pub fn accepted(self) -> Option<T> {
        match self {
            Self::Accept(value) => Some(value),
            Self::Decline | Self::Cancel => None,
        }
    }

    /// The action's name as MCP writes it: `accept`, `decline` or `cancel`.
    pub fn action(&self) -> &'static str {
        match self {
            Self::Accept(_) => "accept",
            Self::Decline => "decline",
            Self::Cancel => "cancel",
        }
    }
}

/// Asks the user for what a tool needs, in process.
///
/// Over MCP the client answers, and a server needs no handler; give one to the tool server
/// ([`with_elicitation_handler`](crate::ToolServerBuilder::with_elicitation_handler)) for
/// the calls an application makes itself. Any
/// `Fn(ElicitationRequest) -> impl Future<Output = AskResult<Elicitation>>` is a handler:
///
/// ```
/// use aleph_tools::prelude::*;
/// use aleph_tools::{Elicitation, ElicitationRequest};
///
/// let server = AlephToolServer::builder()
///     .with_elicitation_handler(|request: ElicitationRequest| async move {
///         // A real application shows `request.message` and a form built from
///         // `request.schema`; this one always declines.
///         println!("{} asks: {}", request.tool, request.message);
///         Ok(Elicitation::Decline)
///     })
///     .build()?;
/// # let _ = server;
/// # Ok::<(), aleph_tools::RegistryError>(())
/// ```
pub trait ElicitationHandler: Send + Sync + 'static {
    /// Shows the form to the user and returns their answer.
    ///
    /// # Errors
    ///
    /// Why the question could not be asked; the tool sees it as a failed call to
    /// [`elicit`](super::ToolContext::elicit).
    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, AskResult<Elicitation>>;
}

impl<F, Fut> ElicitationHandler for F
where
    F: Fn(ElicitationRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = AskResult<Elicitation>> + Send + 'static,
{
    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, AskResult<Elicitation>> {
        Box::pin(self(request))
    }
}

/// Asking the user.
impl ToolContext {
    /// Asks the user to fill in a form for `T` and waits for the answer.
    ///
    /// The form is `T`'s schema: a flat struct of strings, numbers, booleans and enums of
    /// strings (doc comments become the fields' descriptions, `#[serde(default)]` values
    /// their defaults, `Option` fields optional). Over MCP the client asks its user; in
    /// process the server's [`ElicitationHandler`] does.
    ///
    /// ```
    /// use aleph_tools::prelude::*;
    /// use aleph_tools::Elicitation;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Confirm {
    ///     /// Type the repository's name to confirm
    ///     name: String,
    /// }
    ///
    /// /// Deletes a repository, once the user confirms its name.
    /// #[tool]
    /// async fn delete_repo(repo: String, ctx: &ToolContext) -> Result<String, ToolError> {
    ///     let message = format!("Delete `{repo}`? This cannot be undone.");
    ///     match ctx.elicit::<Confirm>(message).await? {
    ///         Elicitation::Accept(Confirm { name }) if name == repo => Ok(format!("deleted {repo}")),
    ///         Elicitation::Accept(_) => Ok("the names differ; nothing deleted".to_owned()),
    ///         Elicitation::Decline | Elicitation::Cancel => Ok("nothing deleted".to_owned()),
    ///     }
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// [`ToolError::Execution`] when `T` cannot be a form (a nested struct, a free list),
    /// when nobody can answer (no client that takes elicitation, no handler), when asking
    /// failed, or when the accepted answer does not fit `T`.
    pub async fn elicit<T>(&self, message: impl Into<String>) -> Result<Elicitation<T>, ToolError>
    where
        T: DeserializeOwned + JsonSchema + 'static,
    {
        let form = form_for::<T>().map_err(|why| {
            let name = std::any::type_name::<T>();
            self.ask_error(format!("`{name}` cannot be a form: {why}"))
        })?;
        match self.ask_form(message.into(), form).await? {
            Elicitation::Accept(fields) => serde_json::from_value(Value::Object(fields))
                .map(Elicitation::Accept)
                .map_err(|err| self.ask_error(format!("the user's answer does not fit: {err}"))),
            Elicitation::Decline => Ok(Elicitation::Decline),
            Elicitation::Cancel => Ok(Elicitation::Cancel),
        }
    }

    /// Asks the user to fill in a form given as JSON Schema (see
    /// [`ElicitationRequest::schema`] for what a form may hold), for forms no Rust type
    /// describes: titled choices (`oneOf` of `const`/`title`), fields known only at run time.
    ///
    /// # Errors
    ///
    /// As [`elicit`](Self::elicit); a schema that cannot be a form says which field is wrong.
    pub async fn elicit_form(
        &self,
        message: impl Into<String>,
        schema: &Value,
    ) -> Result<Elicitation, ToolError> {
        let form = restrict(schema)
            .map_err(|why| self.ask_error(format!("the schema cannot be a form: {why}")))?;
        self.ask_form(message.into(), form).await
    }

    async fn ask_form(&self, message: String, schema: Value) -> Result<Elicitation, ToolError> {
        let Some(handler) = self.elicitation_handler() else {
            return Err(self.ask_error(
                "nobody can answer a question here: serve the tool over MCP to a client that takes elicitation, or give the server an ElicitationHandler".to_owned(),
            ));
        };
        let request = ElicitationRequest {
            tool: self.tool_name().unwrap_or_default().to_owned(),
            call_id: self.call_id,
            message,
            schema,
        };
        handler
            .elicit(request)
            .await
            .map_err(|err| self.ask_error(format!("asking the user failed: {err}")))
    }

    /// Who answers this call's questions to the user: its own handler, or its server's.
    pub(crate) fn elicitation_handler(&self) -> Option<Arc<dyn ElicitationHandler>> {
        self.elicitation
            .clone()
            .or_else(|| self.server.as_ref()?.elicitation_handler())
    }

    /// An error of this call's asking, naming the tool.
    pub(super) fn ask_error(&self, message: String) -> ToolError {
        match self.tool_name() {
            Some(tool) => ToolError::Execution(format!("`{tool}`: {message}")),
            None => ToolError::Execution(message),
        }
    }
}

/// The form for `T`: its schema with `$ref`s inlined and optional fields plain, checked
/// against what elicitation takes.
pub(crate) fn form_for<T: JsonSchema + 'static>() -> Result<Value, String> {
    let schema = Dialect::MCP
        .apply(&schema_for::<T>())
        .map_err(|err| err.to_string())?;
    restrict(&schema)
}

/// `schema` as an elicitation form: the same object with the keywords elicitation does not
/// know left out, or why it cannot be one.
pub(crate) fn restrict(schema: &Value) -> Result<Value, String> {
    let Some(root) = schema.as_object() else {
        return Err("a form's schema must be a JSON object".to_owned());
    };
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err("a form's schema must be an object schema (`\"type\": \"object\"`)".to_owned());
    }
    let mut properties = Map::new();
    if let Some(given) = root.get("properties") {
        let Some(given) = given.as_object() else {
            return Err("a form's `properties` must be an object".to_owned());
        };
        for (name, property) in given {
            let field = restrict_field(property).map_err(|why| format!("field `{name}` {why}"))?;
            properties.insert(name.clone(), field);
        }
    }
    let mut form = Map::new();
    form.insert("type".to_owned(), "object".into());
    form.insert("properties".to_owned(), Value::Object(properties));
    for key in ["required", "title", "description", "$schema"] {
        if let Some(value) = root.get(key) {
            form.insert(key.to_owned(), value.clone());
        }
    }
    Ok(Value::Object(form))
}

/// Keywords every field may carry.
const ANY: &[&str] = &["type", "title", "description", "default"];
/// Keywords a string field may carry, besides [`ANY`].
const STRING: &[&str] = &["minLength", "maxLength", "enum", "enumNames", "oneOf"];
/// Keywords a number or integer field may carry.
const NUMBER: &[&str] = &["minimum", "maximum"];
/// Keywords a multi-select field may carry.
const ARRAY: &[&str] = &["items", "minItems", "maxItems"];
/// The string formats elicitation takes.
const FORMATS: &[&str] = &["email", "uri", "date", "date-time"];

fn restrict_field(field: &Value) -> Result<Value, String> {
    let Some(field) = field.as_object() else {
        return Err("must be a schema object".to_owned());
    };
    let kind = match field.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        // An enum of strings without a `type`, as some generators write it.
        None if field.get("enum").is_some_and(all_strings) => "string",
        Some(other) => {
            return Err(format!(
                "has type {other}; a form field has one type: string, number, integer, boolean, or an array of enum values"
            ));
        }
        None => return Err("has no `type`".to_owned()),
    };
    let extra: &[&str] = match kind {
        "string" => STRING,
        "number" | "integer" => NUMBER,
        "boolean" => &[],
        "array" => ARRAY,
        "object" => {
            return Err(
                "is an object; a form holds only strings, numbers, booleans and enums: flatten it into fields of their own"
                    .to_owned(),
            );
        }
        other => return Err(format!("has type `{other}`, which a form cannot hold")),
    };
    let mut out: Map<String, Value> = field
        .iter()
        .filter(|(key, _)| ANY.contains(&key.as_str()) || extra.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    out.insert("type".to_owned(), kind.into());
    if kind == "string"
        && let Some(format) = field.get("format").and_then(Value::as_str)
        && FORMATS.contains(&format)
    {
        out.insert("format".to_owned(), format.into());
    }
    if kind == "array" {
        let items = field.get("items").and_then(Value::as_object);
        let choices = items.is_some_and(|items| {
            items.get("enum").is_some_and(all_strings) || items.get("anyOf").is_some()
        });
        if !choices {
            return Err(
                "is a list of free values; a form's list is a multi-select: `items` with an `enum` of strings (or an `anyOf` of `const`/`title`)"
                    .to_owned(),
            );
        }
    }
    Ok(Value::Object(out))
}

fn all_strings(values: &Value) -> bool {
    values
        .as_array()
        .is_some_and(|values| values.iter().all(Value::is_string))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(JsonSchema, Deserialize)]
    #[allow(dead_code)]
    struct Contact {
        /// Your name
        name: String,
        email: Option<String>,
        #[serde(default = "thirty")]
        age: u8,
        plan: Plan,
    }

    fn thirty() -> u8 {
        30
    }

    #[derive(JsonSchema, Deserialize)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Plan {
        Free,
        Pro,
    }

    #[test]
    fn a_flat_struct_becomes_a_form() {
        let form = form_for::<Contact>().unwrap();
        assert_eq!(form["properties"]["name"]["type"], "string");
        assert_eq!(form["properties"]["name"]["description"], "Your name");
        assert_eq!(form["properties"]["email"]["type"], "string");
        assert_eq!(form["properties"]["age"]["type"], "integer");
        assert_eq!(form["properties"]["age"]["default"], 30);
        // The integer's `format: uint8` is not a form keyword.
        assert!(form["properties"]["age"].get("format").is_none());
        assert_eq!(form["properties"]["plan"]["enum"], json!(["free", "pro"]));
        assert_eq!(form["required"], json!(["name", "plan"]));
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        address: Address,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Address {
        street: String,
    }

    #[test]
    fn a_nested_object_is_refused_with_the_field_named() {
        let err = form_for::<Nested>().unwrap_err();
        assert!(err.starts_with("field `address` is an object"), "{err}");
    }

    #[test]
    fn free_lists_and_unions_are_refused() {
        let list = json!({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}});
        assert!(restrict(&list).unwrap_err().contains("multi-select"));
        let union = json!({"type": "object", "properties": {"x": {"type": ["string", "integer"]}}});
        assert!(restrict(&union).unwrap_err().contains("one type"));
        assert!(restrict(&json!({"type": "string"})).is_err());
        assert!(restrict(&json!([1])).is_err());
    }

    #[test]
    fn titled_and_multi_select_enums_pass_through() {
        let schema = json!({"type": "object", "properties": {
            "pick": {"type": "string", "oneOf": [{"const": "a", "title": "A"}]},
            "many": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}, "minItems": 1},
            "when": {"type": "string", "format": "date"},
            "odd": {"type": "string", "format": "hostname", "pattern": "^a"}
        }});
        let form = restrict(&schema).unwrap();
        assert_eq!(form["properties"]["pick"], schema["properties"]["pick"]);
        assert_eq!(form["properties"]["many"], schema["properties"]["many"]);
        assert_eq!(form["properties"]["when"]["format"], "date");
        assert_eq!(form["properties"]["odd"], json!({"type": "string"}));
    }

    #[test]
    fn answers_serialize_as_mcp_writes_them() {
        let accepted: Elicitation = Elicitation::Accept(Map::from_iter([("a".into(), 1.into())]));
        assert_eq!(
            serde_json::to_value(&accepted).unwrap(),
            json!({"action": "accept", "content": {"a": 1}})
        );
        let declined: Elicitation = serde_json::from_value(json!({"action": "decline"})).unwrap();
        assert_eq!(declined, Elicitation::Decline);
        assert_eq!(declined.action(), "decline");
    }
}
