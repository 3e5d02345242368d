//! JSON Schemas from Rust types with schemars: generated once per type, cleaned of noise
//! (`$schema`, the root `title`), and cached for the life of the process; checking
//! arguments against them, and repairing arguments a model got nearly right.

pub(crate) mod coerce;
mod dialect;
mod enforced;
#[cfg(feature = "validation")]
mod validate;
#[cfg(not(feature = "validation"))]
#[path = "typed_only.rs"]
mod validate;

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

use crate::util::sync;

pub(crate) use self::coerce::{Coercion, coerce, drop_absent_nulls};
pub use self::dialect::{Dialect, DialectError, Refs};
pub(crate) use self::enforced::serde_enforces;
pub(crate) use self::validate::ArgumentValidator;

/// Which schema of a type: as itself, or as a tool's arguments.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Use {
    Value,
    Arguments,
}

type Cache = RwLock<HashMap<(TypeId, Use), Arc<Value>>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Cache::default)
}

/// The JSON Schema of `T`, as tools offer it to a model.
///
/// The first call for a type generates it; later calls, from any thread, share that one
/// value. The schema follows JSON Schema 2020-12 without `$schema` or a root `title`; nested
/// named types sit under `$defs`. An object schema always has `properties`, even when empty.
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Point {
///     /// Horizontal position
///     x: i32,
///     y: i32,
/// }
///
/// let schema = aleph_tools::schema::schema_for::<Point>();
/// assert_eq!(schema["properties"]["x"]["description"], "Horizontal position");
/// assert!(schema.get("title").is_none());
/// ```
pub fn schema_for<T: JsonSchema + ?Sized + 'static>() -> Arc<Value> {
    cached::<T>(Use::Value)
}

/// The JSON Schema of `T` as a tool's arguments: [`schema_for`] without the root
/// `description`, which would repeat the doc comment of the arguments struct rather than
/// describe the tool (the tool's description says that).
pub fn arguments_schema_for<T: JsonSchema + ?Sized + 'static>() -> Arc<Value> {
    cached::<T>(Use::Arguments)
}

fn cached<T: JsonSchema + ?Sized + 'static>(use_: Use) -> Arc<Value> {
    let key = (TypeId::of::<T>(), use_);
    if let Some(found) = sync::read(cache()).get(&key) {
        return Arc::clone(found);
    }
    // Generate outside the lock: schemars may call back into user `JsonSchema` impls.
    let mut generated = generate::<T>();
    if let (Use::Arguments, Value::Object(root)) = (use_, &mut generated) {
        root.remove("description");
    }
    let mut cache = sync::write(cache());
    Arc::clone(cache.entry(key).or_insert_with(|| Arc::new(generated)))
}

fn generate<T: JsonSchema + ?Sized>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| s.meta_schema = None);
    let mut value = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Value::Object(root) = &mut value {
        root.remove("$schema");
        root.remove("title");
        if root.get("type").and_then(Value::as_str) == Some("object") {
            root.entry("properties")
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
        }
    }
    value
}

/// Whether a schema's root describes a JSON object, as every tool's input schema must.
pub(crate) fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}
