//! The reader against `serde_json`'s own reading of a `Value`.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::{Value, json};

use super::read;

#[derive(Debug, Deserialize, PartialEq)]
struct Date {
    year: u16,
    month: u8,
}

#[derive(Debug, Deserialize, PartialEq)]
enum Event {
    Meeting { on: Date },
    Trip(Vec<Date>),
    Holiday(Option<Date>),
    Rest,
    Pair(u8, u8),
    Nothing(),
}

#[derive(Debug, Deserialize, PartialEq)]
struct Plan {
    start: Date,
    events: Vec<Event>,
    pair: (u8, u8),
    #[serde(default)]
    by_day: BTreeMap<u8, String>,
    #[serde(default)]
    flags: HashMap<bool, char>,
    #[serde(default)]
    note: Option<String>,
}

fn plan() -> Value {
    json!({
        "start": { "year": 2027, "month": 4 },
        "events": [
            { "Meeting": { "on": { "year": 2027, "month": 5 } } },
            { "Trip": [{ "year": 2027, "month": 6 }] },
            { "Holiday": { "year": 2027, "month": 7 } },
            { "Holiday": null },
            "Rest",
            { "Rest": null },
            { "Pair": [1, 2] },
        ],
        "pair": [1, 2],
        "by_day": { "1": "one", "2": "two" },
        "flags": { "true": "y" },
        "note": null,
    })
}

/// `read`'s outcome, and `serde_json`'s own reading of the same value.
fn both<T: for<'de> Deserialize<'de>>(value: &Value) -> (Result<T, String>, Result<T, String>) {
    (
        read::<T>(value).map_err(|failure| failure.error.to_string()),
        T::deserialize(value).map_err(|error| error.to_string()),
    )
}

#[test]
fn reads_what_serde_json_reads_from_objects() {
    let (ours, theirs) = both::<Plan>(&plan());
    assert_eq!(ours, theirs);
    assert_eq!(ours.unwrap().events.len(), 7);
}

#[test]
fn refuses_what_serde_json_refuses_in_its_words() {
    let bad = [
        json!({ "start": { "year": "2027", "month": 4 }, "events": [], "pair": [1, 2] }),
        json!({ "start": { "year": 2027, "month": 400 }, "events": [], "pair": [1, 2] }),
        json!({ "start": { "year": 2027 }, "events": [], "pair": [1, 2] }),
        json!({ "start": { "year": 2027, "month": 4 }, "events": [{ "Cruise": null }], "pair": [1, 2] }),
        json!({ "start": { "year": 2027, "month": 4 }, "events": [{ "Rest": 1 }], "pair": [1, 2] }),
        json!({ "start": { "year": 2027, "month": 4 }, "events": [{ "Rest": null, "Trip": [] }], "pair": [1, 2] }),
        json!({ "start": { "year": 2027, "month": 4 }, "events": [7], "pair": [1, 2] }),
        json!({ "start": { "year": 2027, "month": 4 }, "events": [{ "Nothing": [] }], "pair": [1, 2] }),
        json!({ "start": { "year": 2027, "month": 4 }, "events": [], "pair": [1, 2, 3] }),
        json!({ "start": { "year": 2027, "month": 4 }, "events": [], "pair": [1, 2], "note": 5 }),
        json!({ "start": { "year": 2027.5, "month": 4 }, "events": [], "pair": [1, 2] }),
        json!({ "start": { "year": -1, "month": 4 }, "events": [], "pair": [1, 2] }),
    ];
    for value in bad {
        let (ours, theirs) = both::<Plan>(&value);
        assert!(ours.is_err(), "{value}");
        assert_eq!(ours, theirs, "{value}");
    }
}

#[test]
fn keys_read_as_numbers_and_booleans_must_be_them() {
    let keys = [
        "x", "300", "-1", "+1", "007", "inf", "NaN", "1 ", " 1", "1.5",
    ];
    for key in keys {
        let by_day = json!({ key: "y" });
        let value = json!({ "start": { "year": 2027, "month": 4 }, "events": [], "pair": [1, 2], "by_day": by_day });
        let failure = read::<Plan>(&value).unwrap_err();
        assert_eq!(failure.pointer, "/by_day", "{value}");
        assert_eq!(failure.key.as_deref(), Some(key), "{value}");
        // serde_json refuses each of them too.
        assert!(Plan::deserialize(&value).is_err(), "{value}");
    }
    let value = json!({ "start": { "year": 2027, "month": 4 }, "events": [], "pair": [1, 2], "by_day": { "7": "y", "12": "z" } });
    assert!(read::<Plan>(&value).is_ok());
    let value = json!({ "start": { "year": 2027, "month": 4 }, "events": [], "pair": [1, 2], "flags": { "yes": "y" } });
    assert!(read::<Plan>(&value).is_err());
}

#[test]
fn arrays_for_structs_are_refused_at_every_depth() {
    let bad = [
        json!({ "start": [2027, 4], "events": [], "pair": [1, 2] }),
        json!({ "start": { "year": 2027, "month": 4 }, "events": [{ "Meeting": [[2027, 5]] }], "pair": [1, 2] }),
        json!({ "start": { "year": 2027, "month": 4 }, "events": [{ "Meeting": { "on": [2027, 5] } }], "pair": [1, 2] }),
        json!({ "start": { "year": 2027, "month": 4 }, "events": [{ "Trip": [[2027, 6]] }], "pair": [1, 2] }),
        json!({ "start": { "year": 2027, "month": 4 }, "events": [{ "Holiday": [2027, 7] }], "pair": [1, 2] }),
    ];
    // Plain serde takes a struct from an array, by position.
    assert!(Plan::deserialize(&bad[0]).is_ok());
    for value in bad {
        assert!(read::<Plan>(&value).is_err(), "{value}");
    }
}

#[derive(Debug, Deserialize)]
struct Odd {
    #[serde(rename = "a/b~c")]
    _field: u8,
}

#[test]
fn a_failure_says_where_it_happened() {
    let cases = [
        (
            json!({ "start": { "year": "x", "month": 4 }, "events": [], "pair": [1, 2] }),
            "/start/year",
        ),
        (
            json!({ "start": { "year": 2027, "month": 4 }, "events": [{ "Trip": [{ "year": 1, "month": -1 }] }], "pair": [1, 2] }),
            "/events/0/Trip/0/month",
        ),
        (
            json!({ "start": { "year": 2027, "month": 4 }, "events": [], "pair": [1, "b"] }),
            "/pair/1",
        ),
        // A missing field fails at the object that lacks it.
        (
            json!({ "start": { "month": 4 }, "events": [], "pair": [1, 2] }),
            "/start",
        ),
        (
            json!({ "start": { "year": 2027, "month": 4 }, "pair": [1, 2] }),
            "",
        ),
        (
            json!({ "start": { "year": 2027, "month": 4 }, "events": [], "pair": [1, 2], "by_day": { "a/b~": "c" } }),
            "/by_day",
        ),
        (
            json!({ "start": { "year": 2027, "month": 4 }, "events": [], "pair": [1, 2], "by_day": { "1": 2 } }),
            "/by_day/1",
        ),
        (
            json!({ "start": { "year": 2027, "month": 4 }, "events": [{ "Meeting": {} }], "pair": [1, 2] }),
            "/events/0/Meeting",
        ),
    ];
    for (value, pointer) in cases {
        let failure = read::<Plan>(&value).unwrap_err();
        assert_eq!(failure.pointer, pointer, "{value}: {}", failure.error);
    }
    let failure = read::<Odd>(&json!({ "a/b~c": "x" })).unwrap_err();
    assert_eq!(failure.pointer, "/a~1b~0c");
}
