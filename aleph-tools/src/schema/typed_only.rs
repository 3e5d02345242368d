//! Argument checking without a JSON Schema validator (the `validation` feature off): a tool
//! is served only when serde's reading of its arguments is the whole check its schema asks
//! for, so a call is checked by the read itself, and the server never runs a tool on
//! arguments its schema forbids.

use serde_json::Value;

use crate::error::ArgumentProblem;

/// A tool's arguments checker, for a tool whose types enforce its whole schema.
pub(crate) struct ArgumentValidator;

impl ArgumentValidator {
    /// The checker of a tool with the input schema `schema`; `typed` says whether the tool
    /// reads its arguments with serde into types that enforce the whole of it. The message
    /// says why another tool cannot be served by this build.
    pub(crate) fn new(schema: &Value, typed: bool) -> Result<Self, String> {
        let _ = schema;
        if typed {
            return Ok(Self);
        }
        Err("its arguments must be checked against its input schema (a runtime tool, or a schema with rules its types do not enforce, such as `maximum` or `pattern`), and this build checks schemas only with the `validation` feature of aleph-tools: enable it".to_owned())
    }

    /// Finds nothing: serde reads the arguments next, and says what is wrong with them.
    #[expect(
        clippy::unused_self,
        clippy::unnecessary_wraps,
        reason = "the same signature as with the `validation` feature"
    )]
    pub(crate) fn check(&self, schema: &Value, args: &Value) -> Result<(), Vec<ArgumentProblem>> {
        let _ = (schema, args);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::{Value, json};

    use crate::{
        AlephTool, AlephToolServer, RegistryError, RuntimeTool, ToolContext, ToolDefinition,
        ToolError, ToolErrorKind, ToolOutput,
    };

    #[derive(Deserialize, JsonSchema)]
    struct PairArgs {
        a: i64,
        b: i64,
    }

    /// A tool whose types enforce its schema.
    struct Sum;

    impl AlephTool for Sum {
        const NAME: &'static str = "sum";
        const DESCRIPTION: &'static str = "Add two integers.";
        type Args = PairArgs;
        type Output = i64;

        async fn call(&self, args: PairArgs, _ctx: &ToolContext) -> Result<i64, ToolError> {
            Ok(args.a + args.b)
        }
    }

    #[derive(Deserialize, JsonSchema)]
    struct StepArgs {
        #[schemars(range(min = 1, max = 10))]
        by: u32,
    }

    /// A tool whose schema has a rule its types do not enforce.
    struct Step;

    impl AlephTool for Step {
        const NAME: &'static str = "step";
        const DESCRIPTION: &'static str = "Step by 1 to 10.";
        type Args = StepArgs;
        type Output = u32;

        async fn call(&self, args: StepArgs, _ctx: &ToolContext) -> Result<u32, ToolError> {
            Ok(args.by)
        }
    }

    fn refusal(result: Result<AlephToolServer, RegistryError>) -> String {
        match result {
            Err(RegistryError::InvalidDefinition { reason, .. }) => reason,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn typed_tools_are_checked_by_serde_and_the_rest_are_refused() {
        let server = AlephToolServer::builder().with_tool(Sum).build().unwrap();
        assert_eq!(
            server.call("sum", json!({ "a": 2, "b": 3 })).await.output,
            json!(5)
        );
        for (args, wrong) in [
            (json!({ "a": "two", "b": 3 }), "/a"),
            (json!({ "a": 2 }), "/b"),
            (json!([2, 3]), "JSON object"),
        ] {
            let refused = server.call("sum", args).await;
            assert_eq!(refused.error_kind, Some(ToolErrorKind::InvalidArgs));
            assert!(refused.error.unwrap().contains(wrong), "{wrong}");
        }

        let ranged = AlephToolServer::builder().with_tool(Step).build();
        assert!(refusal(ranged).contains("`validation` feature"));
        let runtime = RuntimeTool::new(
            ToolDefinition::new("echo", "Echo.", json!({ "type": "object" })),
            |args: Value, _: ToolContext| async move { Ok(ToolOutput::text(args.to_string())) },
        );
        let server = AlephToolServer::new();
        let added = server.add(Arc::new(runtime) as Arc<dyn crate::AlephToolDyn>);
        assert!(
            matches!(&added, Err(RegistryError::InvalidDefinition { reason, .. }) if reason.contains("`validation` feature")),
            "{added:?}"
        );
    }
}
