//! What the server may do with a tool that deserializes its own arguments with serde (every
//! [`AlephTool`]): try serde first and check against the schema only when serde refuses,
//! and read JSON text straight into the arguments type.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::{AlephTool, BoxFuture};
use crate::context::ToolContext;
use crate::error::ToolError;
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
        args.is_object() && T::Args::deserialize(args).is_ok()
    }

    fn start<'a>(
        &'a self,
        args: RawArguments<'_>,
        ctx: &'a ToolContext,
    ) -> Option<BoxFuture<'a, Result<ToolOutput, ToolError>>> {
        // Serde reads a struct from an array too; arguments are named, so only an object.
        let args = match args {
            RawArguments::Json(value @ Value::Object(_)) => T::Args::deserialize(value).ok()?,
            RawArguments::Text(text) if text.trim_start().starts_with('{') => {
                serde_json::from_str(text).ok()?
            }
            _ => return None,
        };
        Some(Box::pin(async move {
            self.call(args, ctx).await?.into_tool_output()
        }))
    }
}
