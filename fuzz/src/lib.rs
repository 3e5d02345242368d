//! What the fuzz targets share: a server of tools with one of each argument shape, and a
//! runtime to call it on.

use std::sync::OnceLock;

use aleph_tools::AlephToolServer;
use aleph_tools::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A cabin class.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// The cheap seats
    Economy,
    /// The wide seats
    Business,
}

/// A calendar date.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Date {
    /// Four digits
    pub year: u16,
    /// 1 to 12
    #[schemars(range(min = 1, max = 12))]
    pub month: u8,
    /// 1 to 31
    #[schemars(range(min = 1, max = 31))]
    pub day: u8,
}

/// A node of a tree, for recursive schemas.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Node {
    /// The label
    pub label: String,
    /// The children
    #[serde(default)]
    pub children: Vec<Node>,
}

/// Add two integers.
#[tool(inline, register = false)]
fn add(a: i64, b: i64) -> i64 {
    a.wrapping_add(b)
}

/// An airport.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Airport {
    /// Three capital letters
    #[schemars(pattern(r"^[A-Z]{3}$"))]
    pub code: String,
}

/// Book a flight.
#[tool(inline, register = false)]
fn book_flight(
    /// Where from
    from: Airport,
    /// Where to
    to: Airport,
    /// When
    date: Date,
    /// Which cabin
    class: Option<Class>,
    /// How many seats
    #[arg(default = 1)]
    seats: u8,
    /// Anything else
    notes: Option<Vec<String>>,
) -> String {
    format!("{from:?}-{to:?} {date:?} {class:?} {seats} {notes:?}")
}

/// Count a tree's nodes.
#[tool(inline, register = false)]
fn count_nodes(tree: Node) -> usize {
    fn count(node: &Node) -> usize {
        1 + node.children.iter().map(count).sum::<usize>()
    }
    count(&tree)
}

/// Echo any JSON value.
#[tool(inline, register = false)]
fn echo(value: serde_json::Value, tags: std::collections::HashMap<String, f64>) -> String {
    format!("{value} {}", tags.len())
}

/// The fuzzed server: the tools above, with argument repair on.
pub fn server() -> &'static AlephToolServer {
    static SERVER: OnceLock<AlephToolServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        AlephToolServer::builder()
            .with_tool(AddTool)
            .with_tool(BookFlightTool)
            .with_tool(CountNodesTool)
            .with_tool(EchoTool)
            .with_argument_repair(true)
            .build()
            .expect("the fuzzed tools are valid")
    })
}

/// A current-thread runtime, made once.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    })
}
