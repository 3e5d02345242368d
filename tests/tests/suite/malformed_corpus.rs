//! A generated corpus of malformed calls: every one fails with an argument error that
//! names the right argument and says how to retry; none panics, none runs the tool, and the
//! server keeps serving.

use std::sync::atomic::{AtomicUsize, Ordering};

use aleph_tools::ToolErrorKind;
use aleph_tools::prelude::*;
use serde_json::{Value, json};

static RUNS: AtomicUsize = AtomicUsize::new(0);

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Class {
    Economy,
    Business,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code, reason = "only deserialized")]
struct Date {
    year: u16,
    month: u8,
    day: u8,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code, reason = "only deserialized")]
struct Seat {
    row: u16,
    letter: String,
}

/// Book a flight.
#[tool(register = false)]
#[allow(clippy::too_many_arguments)]
fn book_flight(
    from: String,
    to: String,
    passengers: u8,
    class: Class,
    date: Date,
    seats: Vec<Seat>,
    flexible: bool,
    max_price: Option<f64>,
) -> String {
    let _ = (class, date, seats, flexible, max_price);
    RUNS.fetch_add(1, Ordering::SeqCst);
    format!("{passengers} from {from} to {to}")
}

fn valid() -> Value {
    json!({
        "from": "LIS",
        "to": "OSL",
        "passengers": 2,
        "class": "economy",
        "date": { "year": 2027, "month": 4, "day": 1 },
        "seats": [{ "row": 12, "letter": "A" }],
        "flexible": true,
        "max_price": 420.5,
    })
}

fn deep(depth: usize) -> Value {
    (0..depth).fold(json!(1), |inner, _| Value::Array(vec![inner]))
}

/// Values that are wrong for each kind of argument.
fn wrong_values(kind: &str) -> Vec<Value> {
    let common = vec![json!(null), json!([]), json!({}), deep(1_000)];
    let specific = match kind {
        "string" => vec![
            json!(true),
            json!(0),
            json!(1.5),
            json!(["a"]),
            json!({ "a": "b" }),
        ],
        "u8" => vec![
            json!(true),
            json!(-1),
            json!(1.5),
            json!(256),
            json!(1e300),
            json!("2"),
            json!(""),
            json!("two"),
            json!([2]),
        ],
        "u16" => vec![
            json!(-5),
            json!(65_536),
            json!(0.5),
            json!("12"),
            json!(false),
        ],
        "enum" => vec![
            json!("first"),
            json!("Economy"),
            json!("economy "),
            json!(""),
            json!(1),
            json!(["economy"]),
            json!("é\u{0}"),
        ],
        "bool" => vec![json!("true"), json!(1), json!(0), json!("yes")],
        "f64" => vec![json!("cheap"), json!(true), json!("1e3")],
        "seats" => vec![
            json!("12A"),
            json!(1),
            json!([1]),
            json!([{}]),
            json!([{ "row": "twelve", "letter": "A" }]),
            json!([{ "row": 12 }]),
            json!([{ "row": 12, "letter": 5 }]),
            json!([null]),
        ],
        "date" => vec![
            json!("2027-04-01"),
            json!(20_270_401),
            json!({ "year": 2027 }),
            json!({ "year": "2027", "month": 4, "day": 1 }),
            json!({ "year": 2027, "month": 400, "day": 1 }),
            json!([2027, 4, 1]),
        ],
        other => panic!("no values for {other}"),
    };
    let optional = kind == "f64";
    common
        .into_iter()
        // `null` is a fine value for an optional argument, `[]` for a list.
        .filter(|v| {
            let fine = (optional && v.is_null()) || (kind == "seats" && *v == json!([]));
            !fine
        })
        .chain(specific)
        .collect()
}

/// Each case: the arguments, and what the error must contain.
fn corpus() -> Vec<(Value, Vec<String>)> {
    let fields = [
        ("from", "string"),
        ("to", "string"),
        ("passengers", "u8"),
        ("class", "enum"),
        ("flexible", "bool"),
        ("max_price", "f64"),
        ("seats", "seats"),
        ("date", "date"),
    ];
    let mut cases = Vec::new();
    for (field, kind) in fields {
        for value in wrong_values(kind) {
            let mut args = valid();
            args[field] = value;
            cases.push((args, vec![format!("`/{field}")]));
        }
    }
    // Two wrong arguments at once: both are reported.
    for (i, (first, first_kind)) in fields.iter().enumerate() {
        for (second, second_kind) in &fields[i + 1..] {
            for k in 0..3 {
                let a = wrong_values(first_kind);
                let b = wrong_values(second_kind);
                let mut args = valid();
                args[*first] = a[(k * 2 + 4) % a.len()].clone();
                args[*second] = b[(k * 3 + 5) % b.len()].clone();
                cases.push((args, vec![format!("`/{first}"), format!("`/{second}")]));
            }
        }
    }
    for (nested, kind) in [("year", "u16"), ("month", "u8"), ("day", "u8")] {
        for value in wrong_values(kind) {
            let mut args = valid();
            args["date"][nested] = value;
            cases.push((args, vec![format!("`/date/{nested}`")]));
        }
    }
    for required in [
        "from",
        "to",
        "passengers",
        "class",
        "date",
        "seats",
        "flexible",
    ] {
        let mut args = valid();
        args.as_object_mut().unwrap().remove(required);
        cases.push((
            args,
            vec![format!(
                "`/{required}`: expected a value for this required argument, received nothing"
            )],
        ));
    }
    for root in [
        json!("book it"),
        json!(42),
        json!(true),
        json!([]),
        json!([valid()]),
        json!(1.5),
        json!(""),
        deep(1_000),
    ] {
        cases.push((
            root,
            vec!["the arguments: expected a JSON object of named arguments".to_owned()],
        ));
    }
    cases
}

/// A short, shallow picture of a case for failure messages (the deep values would overflow
/// the stack of a recursive serializer).
fn outline(args: &Value) -> String {
    match args {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}: {}", outline(v)))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Array(items) => format!("[{} items]", items.len()),
        other => other.to_string(),
    }
}

#[tokio::test]
async fn every_malformed_call_fails_cleanly_and_names_its_argument() {
    let s = AlephToolServer::builder()
        .with_tool(BookFlightTool)
        .build()
        .unwrap();
    let cases = corpus();
    assert!(cases.len() >= 200, "only {} cases", cases.len());
    for (args, needles) in &cases {
        let result = s.call("book_flight", args.clone()).await;
        let shown = outline(args);
        assert!(!result.success, "{shown} succeeded");
        assert_eq!(
            result.error_kind,
            Some(ToolErrorKind::InvalidArgs),
            "{shown}: {result:?}"
        );
        let message = result.error.unwrap();
        for needle in needles {
            assert!(
                message.contains(needle.as_str()),
                "{shown}: `{message}` lacks `{needle}`"
            );
        }
        assert!(
            message.starts_with("invalid arguments for `book_flight`")
                && message.ends_with("Fix the arguments and call `book_flight` again."),
            "{shown}: {message}"
        );
        assert!(
            message.len() < 4_000,
            "{shown}: a {}-byte message",
            message.len()
        );
    }
    assert_eq!(
        RUNS.load(Ordering::SeqCst),
        0,
        "the tool ran on a malformed call"
    );

    // With repair on, nothing panics either: each call is repaired or refused.
    let repairing = AlephToolServer::builder()
        .with_tool(BookFlightTool)
        .with_argument_repair(true)
        .build()
        .unwrap();
    for (args, _) in &cases {
        let result = repairing.call("book_flight", args.clone()).await;
        assert!(
            result.success || result.error_kind == Some(ToolErrorKind::InvalidArgs),
            "{result:?}"
        );
    }

    // And the server still serves.
    for _ in 0..100 {
        assert!(s.call("book_flight", valid()).await.success);
    }
}

#[tokio::test]
async fn malformed_names_fail_cleanly() {
    let s = AlephToolServer::builder()
        .with_tool(BookFlightTool)
        .build()
        .unwrap();
    let long = "x".repeat(10_000);
    for name in [
        "",
        " ",
        "book flight!",
        "../book_flight",
        "book_flight\0",
        "BOOK_FLIGHT_NOW",
        "\u{202e}thgilf",
        long.as_str(),
        "book.flight",
        "🛫",
    ] {
        let result = s.call(name, valid()).await;
        assert_eq!(result.error_kind, Some(ToolErrorKind::NotFound), "{name:?}");
    }
}
