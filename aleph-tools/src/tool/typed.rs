//! What the server may do with a tool that deserializes its own arguments with serde (every
//! [`AlephTool`]): try serde first and check against the schema only when serde refuses,
//! and read JSON text straight into the arguments type.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{AlephTool, BoxFuture};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::objects_only::ObjectsOnly;
use crate::result::{IntoToolOutput, ToolOutput};
use crate::schema;

/// A call's arguments as the caller holds them.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum RawArguments<'a> {
    /// A JSON value.
    Json(&'a Value),
    /// JSON text.
    Text(&'a str),
}

/// A tool whose arguments are a serde type. Not public API: the server's fast path.
#[doc(hidden)]
pub trait TypedArguments: Send + Sync {
    /// The schema generated from the arguments type. The server trusts serde only for a
    /// tool whose input schema is this one.
    fn own_schema(&self) -> Arc<Value>;

    /// Whether `args` are an object that deserializes into the arguments type.
    fn accepts(&self, args: &Value) -> bool;

    /// The call, when `args` are an object that deserializes into the arguments type;
    /// `None` when they are not.
    fn start<'a>(
        &'a self,
        args: RawArguments<'_>,
        ctx: &'a ToolContext,
    ) -> Option<BoxFuture<'a, Result<ToolOutput, ToolError>>>;
}

impl<T: AlephTool> TypedArguments for T {
    fn own_schema(&self) -> Arc<Value> {
        schema::arguments_schema_for::<T::Args>()
    }

    fn accepts(&self, args: &Value) -> bool {
        parse_value::<T::Args>(args).is_some()
    }

    fn start<'a>(
        &'a self,
        args: RawArguments<'_>,
        ctx: &'a ToolContext,
    ) -> Option<BoxFuture<'a, Result<ToolOutput, ToolError>>> {
        let args = match args {
            RawArguments::Json(value) => parse_value::<T::Args>(value)?,
            RawArguments::Text(text) => parse_text::<T::Args>(text)?,
        };
        Some(Box::pin(async move {
            self.call(args, ctx).await?.into_tool_output()
        }))
    }
}

// Arguments are named, so the arguments are an object, and so is every struct in them: serde
// alone would read a struct from an array, by position.

fn parse_value<A: DeserializeOwned>(value: &Value) -> Option<A> {
    if !value.is_object() {
        return None;
    }
    A::deserialize(ObjectsOnly(value)).ok()
}

fn parse_text<A: DeserializeOwned>(text: &str) -> Option<A> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let args = A::deserialize(ObjectsOnly(&mut deserializer)).ok()?;
    deserializer.end().ok()?;
    Some(args)
}
