//! One tool, `add`, and one with nested struct arguments, `distance`, written for each
//! framework the benchmarks compare, plus the floor: what a program with no tool framework
//! writes (the arguments text read into a struct, the function, the output written back).
//!
//! Each `*_text` function takes a model's arguments text and gives the result text, and each
//! `*_value` function the arguments as a JSON value (as an MCP server receives them), so the
//! benchmarks compare the same work.

use std::collections::HashMap;

use serde::Deserialize;

/// `add`'s arguments as a model sends them.
pub const ADD_ARGS: &str = r#"{"a":20,"b":22}"#;

/// `distance`'s arguments as a model sends them.
pub const DISTANCE_ARGS: &str = r#"{"from":{"x":1.5,"y":2.0},"to":{"x":4.5,"y":6.0}}"#;

/// A point on the plane.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
pub struct Point {
    /// Horizontal position
    pub x: f64,
    /// Vertical position
    pub y: f64,
}

/// The sum, as every framework computes it.
pub fn sum(a: i64, b: i64) -> i64 {
    a.wrapping_add(b)
}

/// The distance, as every framework computes it.
pub fn span(from: Point, to: Point) -> f64 {
    (to.x - from.x).hypot(to.y - from.y)
}

/// The floor: `serde_json` in, the function, `serde_json` out.
pub mod floor {
    use serde::Deserialize;

    use super::Point;

    #[derive(Deserialize)]
    struct AddArgs {
        a: i64,
        b: i64,
    }

    #[derive(Deserialize)]
    struct DistanceArgs {
        from: Point,
        to: Point,
    }

    /// `add` by hand.
    pub fn add_text(args: &str) -> String {
        let args: AddArgs = serde_json::from_str(args).expect("valid arguments");
        serde_json::to_string(&super::sum(args.a, args.b)).expect("a number")
    }

    /// `distance` by hand.
    pub fn distance_text(args: &str) -> String {
        let args: DistanceArgs = serde_json::from_str(args).expect("valid arguments");
        serde_json::to_string(&super::span(args.from, args.to)).expect("a number")
    }

    /// `add` by hand, from a value.
    pub fn add_value(args: serde_json::Value) -> String {
        let args: AddArgs = serde_json::from_value(args).expect("valid arguments");
        serde_json::to_string(&super::sum(args.a, args.b)).expect("a number")
    }

    /// `distance` by hand, from a value.
    pub fn distance_value(args: serde_json::Value) -> String {
        let args: DistanceArgs = serde_json::from_value(args).expect("valid arguments");
        serde_json::to_string(&super::span(args.from, args.to)).expect("a number")
    }
}

/// aleph-tools: `#[tool]` functions in an `AlephToolServer`, called by name with the
/// arguments text (`call_str`) or a JSON value (`call`).
pub mod aleph {
    use aleph_tools::prelude::*;

    use super::Point;

    /// Add two integers.
    // `inline`: a pure computation runs in place, not on the blocking pool.
    #[tool(register = false, inline)]
    pub fn add(
        /// First addend
        a: i64,
        /// Second addend
        b: i64,
    ) -> i64 {
        super::sum(a, b)
    }

    /// Distance between two points.
    #[tool(register = false, inline)]
    pub fn distance(
        /// Where to measure from
        from: Point,
        /// Where to measure to
        to: Point,
    ) -> f64 {
        super::span(from, to)
    }

    /// A server holding both tools.
    pub fn server() -> AlephToolServer {
        AlephToolServer::builder()
            .with_tool(AddTool)
            .with_tool(DistanceTool)
            .build()
            .expect("valid tools")
    }

    /// Calls `name` on `server` with `args`; the output as JSON text.
    pub async fn call_text(server: &AlephToolServer, name: &str, args: &str) -> String {
        let result = server.call_str(name, args).await;
        assert!(result.success, "{:?}", result.error);
        result.output.to_string()
    }

    /// Calls `name` on `server` with the value `args`; the output as JSON text.
    pub async fn call_value(
        server: &AlephToolServer,
        name: &str,
        args: serde_json::Value,
    ) -> String {
        let result = server.call(name, args).await;
        assert!(result.success, "{:?}", result.error);
        result.output.to_string()
    }
}

/// rig: `Tool` implementations, dispatched by name through their `ErasedTool` form (rig
/// 0.44 keeps no name-keyed tool set of its own outside its agent runtime, so a `HashMap`
/// stands for one; that is the least work a rig host does per call).
pub mod rig {
    use std::collections::HashMap;

    use rig_core::tool::{ErasedTool, Tool, ToolContext};
    use serde::Deserialize;

    use super::Point;

    /// The error neither tool returns.
    pub type Never = std::convert::Infallible;

    /// `add` for rig.
    pub struct Add;

    /// `add`'s arguments.
    #[derive(Deserialize, schemars::JsonSchema)]
    pub struct AddArgs {
        /// First addend
        a: i64,
        /// Second addend
        b: i64,
    }

    impl Tool for Add {
        const NAME: &'static str = "add";
        type Args = AddArgs;
        type Output = i64;
        type Error = Never;

        fn description(&self) -> String {
            "Add two integers.".to_owned()
        }

        fn parameters(&self) -> serde_json::Value {
            serde_json::to_value(schemars::schema_for!(AddArgs)).expect("a schema")
        }

        async fn call(&self, _ctx: &mut ToolContext, args: AddArgs) -> Result<i64, Never> {
            Ok(super::sum(args.a, args.b))
        }
    }

    /// `distance` for rig.
    pub struct Distance;

    /// `distance`'s arguments.
    #[derive(Deserialize, schemars::JsonSchema)]
    pub struct DistanceArgs {
        /// Where to measure from
        from: Point,
        /// Where to measure to
        to: Point,
    }

    impl Tool for Distance {
        const NAME: &'static str = "distance";
        type Args = DistanceArgs;
        type Output = f64;
        type Error = Never;

        fn description(&self) -> String {
            "Distance between two points.".to_owned()
        }

        fn parameters(&self) -> serde_json::Value {
            serde_json::to_value(schemars::schema_for!(DistanceArgs)).expect("a schema")
        }

        async fn call(&self, _ctx: &mut ToolContext, args: DistanceArgs) -> Result<f64, Never> {
            Ok(super::span(args.from, args.to))
        }
    }

    /// Both tools by name.
    pub type Tools = HashMap<String, Box<dyn ErasedTool>>;

    /// Both tools by name.
    pub fn tools() -> Tools {
        let mut tools: Tools = HashMap::new();
        tools.insert(Add::NAME.to_owned(), Box::new(Add));
        tools.insert(Distance::NAME.to_owned(), Box::new(Distance));
        tools
    }

    /// Calls `name` with `args`; the output as JSON text.
    pub async fn call_text(tools: &Tools, name: &str, args: &str) -> String {
        let tool = tools.get(name).expect("a known tool");
        let mut ctx = ToolContext::default();
        let result = tool.execute(args.to_owned(), &mut ctx).await;
        assert!(result.is_success(), "{name} failed");
        result.output().render()
    }
}

/// rmcp: a `#[tool_router]` server, served over MCP only (its tools are called through a
/// request context that only a running service has).
pub mod rmcp_server {
    use rmcp::handler::server::router::tool::ToolRouter;
    use rmcp::handler::server::wrapper::{Json, Parameters};
    use rmcp::{ServerHandler, tool, tool_handler, tool_router};
    use serde::Deserialize;

    use super::Point;

    /// The server, holding its tool router as rmcp's documentation writes a server: built
    /// once, not at each call (which `#[tool_router(server_handler)]` on a unit struct does).
    #[derive(Clone)]
    pub struct Calculator {
        tool_router: ToolRouter<Self>,
    }

    impl Default for Calculator {
        fn default() -> Self {
            Self {
                tool_router: Self::tool_router(),
            }
        }
    }

    /// `add`'s arguments.
    #[derive(Deserialize, schemars::JsonSchema)]
    pub struct AddArgs {
        /// First addend
        a: i64,
        /// Second addend
        b: i64,
    }

    /// `distance`'s arguments.
    #[derive(Deserialize, schemars::JsonSchema)]
    pub struct DistanceArgs {
        /// Where to measure from
        from: Point,
        /// Where to measure to
        to: Point,
    }

    #[tool_router]
    impl Calculator {
        /// Add two integers.
        #[tool]
        fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
            json_text(super::sum(a, b))
        }

        /// Distance between two points.
        #[tool]
        fn distance(
            &self,
            Parameters(DistanceArgs { from, to }): Parameters<DistanceArgs>,
        ) -> String {
            json_text(super::span(from, to))
        }
    }

    #[tool_handler(router = self.tool_router)]
    impl ServerHandler for Calculator {}

    /// The same tools answering with structured content, as a tool with an output schema
    /// must (and as aleph-tools' do): rmcp's `Json` wrapper declares the schema and sends
    /// the value beside its text.
    #[derive(Clone)]
    pub struct StructuredCalculator {
        tool_router: ToolRouter<Self>,
    }

    impl Default for StructuredCalculator {
        fn default() -> Self {
            Self {
                tool_router: Self::tool_router(),
            }
        }
    }

    /// A tool's output, as MCP wants an output schema: an object.
    #[derive(serde::Serialize, schemars::JsonSchema)]
    pub struct Output<T> {
        result: T,
    }

    #[tool_router]
    impl StructuredCalculator {
        /// Add two integers.
        #[tool]
        fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> Json<Output<i64>> {
            Json(Output {
                result: super::sum(a, b),
            })
        }

        /// Distance between two points.
        #[tool]
        fn distance(
            &self,
            Parameters(DistanceArgs { from, to }): Parameters<DistanceArgs>,
        ) -> Json<Output<f64>> {
            Json(Output {
                result: super::span(from, to),
            })
        }
    }

    #[tool_handler(router = self.tool_router)]
    impl ServerHandler for StructuredCalculator {}

    /// The number as JSON text, as the other frameworks write it.
    fn json_text<T: serde::Serialize>(value: T) -> String {
        serde_json::to_string(&value).expect("a number")
    }
}

/// The arguments of each tool, by name, as JSON objects (for MCP clients).
pub fn arguments() -> HashMap<&'static str, serde_json::Map<String, serde_json::Value>> {
    let object = |text: &str| serde_json::from_str(text).expect("an object");
    HashMap::from([
        ("add", object(ADD_ARGS)),
        ("distance", object(DISTANCE_ARGS)),
    ])
}
