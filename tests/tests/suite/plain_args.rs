//! `#[tool]` writes the `Deserialize` and `JsonSchema` of an arguments struct itself when
//! no field has a `#[serde]` or `#[schemars]` attribute, and lets the derives write them
//! when one does. Either way a tool reads and describes its arguments alike: each tool
//! here has a twin whose one no-op `#[serde(rename)]` makes it take the derives.

use aleph_tools::prelude::*;
use aleph_tools::schema::{arguments_schema_for, schema_for};
use serde_json::{Value, json};

/// Units for a reading.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Unit {
    #[default]
    Celsius,
    Fahrenheit,
}

/// A default that cannot be shown in the schema: the type does not serialize.
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)] // Read through `Debug`.
struct Window {
    from: u32,
    to: u32,
}

/// Read a sensor.
#[tool(name = "read", register = false)]
fn plain(
    /// # Sensor
    /// The sensor's id, from 0 to 255.
    id: u8,
    /// The unit of the reading
    #[arg(default)]
    unit: Unit,
    window: Option<Window>,
    /// How many samples to average
    #[arg(default = 3)]
    samples: u16,
    /// Tags to match
    tags: Vec<String>,
    #[arg(default)] span: Window,
    /// A raw name
    r#type: Option<String>,
) -> String {
    format!("{id} {unit:?} {window:?} {samples} {tags:?} {span:?} {type:?}")
}

/// Read a sensor.
#[tool(name = "read", register = false)]
fn derived(
    /// # Sensor
    /// The sensor's id, from 0 to 255.
    #[serde(rename = "id")]
    id: u8,
    /// The unit of the reading
    #[arg(default)]
    unit: Unit,
    window: Option<Window>,
    /// How many samples to average
    #[arg(default = 3)]
    samples: u16,
    /// Tags to match
    tags: Vec<String>,
    #[arg(default)] span: Window,
    /// A raw name
    r#type: Option<String>,
) -> String {
    format!("{id} {unit:?} {window:?} {samples} {tags:?} {span:?} {type:?}")
}

/// Takes only known keys.
#[tool(name = "strict", strict, register = false)]
fn plain_strict(
    /// A count
    count: u32,
    /// A word
    word: Option<String>,
) -> String {
    format!("{count} {word:?}")
}

/// Takes only known keys.
#[tool(name = "strict", strict, register = false)]
fn derived_strict(
    /// A count
    #[serde(rename = "count")]
    count: u32,
    /// A word
    word: Option<String>,
) -> String {
    format!("{count} {word:?}")
}

/// Takes nothing.
#[tool(name = "nothing", register = false)]
fn plain_nothing() -> String {
    "done".to_owned()
}

/// Arguments good and bad, as JSON text.
const CASES: &[&str] = &[
    r#"{"id": 7, "tags": ["a"]}"#,
    r#"{"id": 7, "unit": "fahrenheit", "window": {"from": 1, "to": 2}, "samples": 9, "tags": [], "span": {"from": 3, "to": 4}, "type": "t"}"#,
    r#"{"id": 7, "tags": [], "window": null, "type": null}"#,
    r#"{"id": 7, "tags": [], "samples": null}"#,
    r#"{"id": 300, "tags": []}"#,
    r#"{"id": "7", "tags": []}"#,
    r#"{"id": 7, "tags": [], "extra": true}"#,
    r#"{"id": 7, "id": 8, "tags": []}"#,
    r#"{"tags": [], "tags": [], "id": 1}"#,
    r#"{"tags": []}"#,
    r#"{"id": 7}"#,
    r#"{"id": 7, "unit": "kelvin", "tags": []}"#,
    r#"[7, "celsius", null, 3, [], {"from": 0, "to": 0}, "t"]"#,
    "[7]",
    "[]",
    "null",
    "{}",
    "7",
    r#""text""#,
];

const STRICT_CASES: &[&str] = &[
    r#"{"count": 1}"#,
    r#"{"count": 1, "word": "w"}"#,
    r#"{"count": 1, "other": 2}"#,
    r#"{"other": 2}"#,
    r#"{"count": 1, "count": 2}"#,
    "[1]",
    "{}",
];

/// What `serde_json` makes of `text` as `T`: its debug text or its error, with the derived
/// twin's name read as the plain one's.
fn read<T: serde::de::DeserializeOwned + std::fmt::Debug>(text: &str) -> Result<String, String> {
    serde_json::from_str::<T>(text)
        .map(|value| format!("{value:?}"))
        .map_err(|err| err.to_string().replace("struct Derived", "struct Plain"))
}

/// An arguments struct read, shown as the debug text of its fields (it has no `Debug`).
struct Shown<T>(String, std::marker::PhantomData<T>);

impl<T> std::fmt::Debug for Shown<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `Shown<$ty>` reads a `$ty` and shows its fields.
macro_rules! shown {
    ($($ty:ident { $($field:ident),* })*) => {$(
        impl<'de> serde::Deserialize<'de> for Shown<$ty> {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let $ty { $($field),* } = <$ty as serde::Deserialize>::deserialize(d)?;
                let fields: Vec<&dyn std::fmt::Debug> = vec![$(&$field),*];
                Ok(Shown(format!("{fields:?}"), std::marker::PhantomData))
            }
        }
    )*};
}

shown! {
    PlainArgs { id, unit, window, samples, tags, span, r#type }
    DerivedArgs { id, unit, window, samples, tags, span, r#type }
    PlainStrictArgs { count, word }
    DerivedStrictArgs { count, word }
}

#[test]
fn both_read_every_case_alike() {
    for text in CASES {
        assert_eq!(
            read::<Shown<PlainArgs>>(text),
            read::<Shown<DerivedArgs>>(text),
            "{text}"
        );
    }
    for text in STRICT_CASES {
        assert_eq!(
            read::<Shown<PlainStrictArgs>>(text),
            read::<Shown<DerivedStrictArgs>>(text),
            "{text}"
        );
    }
}

#[test]
fn both_describe_themselves_alike_to_the_key_order() {
    let text = |schema: &Value| serde_json::to_string(schema).unwrap();
    assert_eq!(
        text(&arguments_schema_for::<PlainArgs>()),
        text(&arguments_schema_for::<DerivedArgs>())
    );
    assert_eq!(
        text(&arguments_schema_for::<PlainStrictArgs>()),
        text(&arguments_schema_for::<DerivedStrictArgs>())
    );
    // The struct's own doc comment too, which the arguments schema leaves out.
    let described = schema_for::<PlainArgs>();
    assert_eq!(
        described["description"],
        "Arguments of the `read` tool (generated by `#[tool]` from `plain`)."
    );
}

#[test]
fn the_schema_says_what_the_reader_does() {
    let schema = arguments_schema_for::<PlainArgs>();
    assert_eq!(schema["required"], json!(["id", "tags"]));
    let id = &schema["properties"]["id"];
    assert_eq!(id["title"], "Sensor");
    assert_eq!(id["description"], "The sensor's id, from 0 to 255.");
    assert_eq!(schema["properties"]["samples"]["default"], 3);
    assert_eq!(schema["properties"]["unit"]["default"], "celsius");
    assert!(schema["properties"]["span"].get("default").is_none());
    assert!(schema["properties"]["type"].is_object());
    let strict = arguments_schema_for::<PlainStrictArgs>();
    assert_eq!(strict["additionalProperties"], false);
    let nothing = arguments_schema_for::<PlainNothingArgs>();
    assert_eq!(*nothing, json!({"type": "object", "properties": {}}));
}

/// Serves each of two tools of one name alone and calls both with every case.
async fn served_alike(plain: impl AlephTool, derived: impl AlephTool, name: &str, cases: &[&str]) {
    let serve = |builder: aleph_tools::ToolServerBuilder| builder.build().unwrap();
    let plain = serve(AlephToolServer::builder().with_tool(plain));
    let derived = serve(AlephToolServer::builder().with_tool(derived));
    for text in cases {
        let mut from_plain = plain.call_str(name, text).await;
        let mut from_derived = derived.call_str(name, text).await;
        from_plain.duration_ms = 0;
        from_derived.duration_ms = 0;
        assert_eq!(from_plain, from_derived, "{text}");
    }
}

#[tokio::test]
async fn a_served_call_answers_alike() {
    served_alike(PlainTool, DerivedTool, "read", CASES).await;
    served_alike(PlainStrictTool, DerivedStrictTool, "strict", STRICT_CASES).await;
    let nothing = AlephToolServer::builder()
        .with_tool(PlainNothingTool)
        .build()
        .unwrap();
    assert!(nothing.call("nothing", Value::Null).await.success);
    assert!(nothing.call("nothing", json!({"any": 1})).await.success);
}
