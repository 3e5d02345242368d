//! `compress_snapshot`: every shape of output stays within the limit, JSON stays JSON, and
//! no character is split.

use aleph_tools::compress_snapshot;
use serde_json::{Value, json};

fn len(s: &str) -> usize {
    s.chars().count()
}

#[test]
fn output_that_fits_and_empty_output_are_unchanged() {
    assert_eq!(compress_snapshot("", 0), "");
    assert_eq!(compress_snapshot("", 10), "");
    assert_eq!(compress_snapshot("short", 5), "short");
    assert_eq!(compress_snapshot("[1,2,3]", 100), "[1,2,3]");
}

#[test]
fn arrays_keep_leading_items_and_count_the_rest() {
    let list = json!((0..1000).collect::<Vec<_>>()).to_string();
    let out = compress_snapshot(&list, 60);
    assert!(len(&out) <= 60, "{out}");
    let parsed: Vec<Value> = serde_json::from_str(&out).expect("still JSON");
    assert_eq!(parsed[0], 0);
    let marker = parsed.last().unwrap().as_str().unwrap();
    assert!(marker.ends_with("more items (1000 in all)"), "{marker}");
    let kept = parsed.len() - 1;
    assert!(
        marker.starts_with(&format!("… {} more", 1000 - kept)),
        "{marker}"
    );
}

#[test]
fn objects_keep_keys_and_shorten_values() {
    let object = json!({
        "id": 7,
        "title": "a".repeat(500),
        "tags": (0..200).map(|i| format!("tag{i}")).collect::<Vec<_>>(),
        "owner": { "name": "Ada", "email": "ada@example.com", "roles": ["admin", "dev"] },
        "ok": true
    })
    .to_string();
    let out = compress_snapshot(&object, 200);
    assert!(len(&out) <= 200, "{} chars: {out}", len(&out));
    let parsed: Value = serde_json::from_str(&out).expect("still JSON");
    assert_eq!(parsed["id"], 7);
    assert!(parsed["title"].as_str().unwrap().ends_with('…'));
    assert_eq!(parsed["tags"], "[200 items]");
}

#[test]
fn objects_too_big_for_their_keys_count_the_keys_left_out() {
    let object: serde_json::Map<String, Value> = (0..100)
        .map(|i| (format!("key_number_{i:03}"), json!(i)))
        .collect();
    let out = compress_snapshot(&Value::Object(object).to_string(), 120);
    assert!(len(&out) <= 120, "{out}");
    let parsed: Value = serde_json::from_str(&out).expect("still JSON");
    assert!(
        parsed["…"].as_str().unwrap().ends_with("more keys"),
        "{out}"
    );
}

#[test]
fn text_is_cut_at_a_character_boundary_with_a_note() {
    let text = "日本語のテキスト🦀".repeat(100);
    for max in [0, 1, 5, 10, 30, 31, 50, 200] {
        let out = compress_snapshot(&text, max);
        assert!(len(&out) <= max, "max {max}: {out}");
        assert!(
            text.starts_with(out.split('…').next().unwrap()),
            "max {max}: a prefix"
        );
    }
    let out = compress_snapshot(&text, 50);
    assert!(out.ends_with("more characters]"), "{out}");
}

#[test]
fn json_that_cannot_shrink_far_enough_falls_back_to_text() {
    let list = json!(["x".repeat(1000)]).to_string();
    let out = compress_snapshot(&list, 20);
    assert!(len(&out) <= 20, "{out}");
    let scalar = json!("y".repeat(1000)).to_string();
    assert!(len(&compress_snapshot(&scalar, 30)) <= 30);
}

#[test]
fn a_corpus_of_shapes_never_exceeds_the_limit() {
    let samples = [
        json!(
            (0..500)
                .map(|i| json!({ "i": i, "name": format!("item {i}") }))
                .collect::<Vec<_>>()
        ),
        json!({ "nested": { "deeper": { "deepest": "z".repeat(300) } }, "n": null }),
        json!((0..50).map(|i| "é".repeat(i)).collect::<Vec<_>>()),
        json!({ "": "", "🦀": "🦀".repeat(100) }),
    ];
    for sample in samples {
        let text = sample.to_string();
        for max in [0, 3, 10, 40, 80, 160, 1000] {
            let out = compress_snapshot(&text, max);
            assert!(len(&out) <= max, "max {max}: {out}");
        }
    }
}

mod served {
    use aleph_tools::prelude::*;
    use serde_json::json;

    /// List many numbers.
    #[tool(register = false)]
    fn numbers(count: u32) -> Vec<u32> {
        (0..count).collect()
    }

    /// Write a long text.
    #[tool(register = false)]
    fn essay(words: usize) -> String {
        "word ".repeat(words)
    }

    /// A long caption between two images.
    #[tool(register = false)]
    fn album(words: usize) -> ToolOutput {
        ToolOutput::image([1, 2, 3], "image/png")
            .with(Content::text("word ".repeat(words)))
            .with(Content::text("and more"))
            .with_image([4, 5], "image/jpeg")
    }

    #[tokio::test]
    async fn the_limit_shortens_the_text_blocks_and_keeps_the_images() {
        let server = AlephToolServer::builder()
            .with_tool(AlbumTool)
            .with_output_limit(40)
            .build()
            .unwrap();
        let long = server.call("album", json!({ "words": 100 })).await;
        assert_eq!(long.content.len(), 3, "{:?}", long.content);
        assert!(matches!(long.content[0], Content::Image(_)));
        let text = long.content[1].as_text().expect("one shortened text block");
        assert!(
            text.chars().count() <= 40 && text.ends_with("more characters]"),
            "{text}"
        );
        assert!(matches!(long.content[2], Content::Image(_)));
        // The output (the text blocks, joined) stays whole.
        assert!(long.output.as_str().unwrap().ends_with("word \nand more"));

        let short = server.call("album", json!({ "words": 2 })).await;
        assert_eq!(
            short.content.len(),
            4,
            "within the limit, every block stays"
        );
    }

    #[tokio::test]
    async fn the_server_limits_what_the_model_reads_and_keeps_the_data_whole() {
        let server = AlephToolServer::builder()
            .with_tool(NumbersTool)
            .with_tool(EssayTool)
            .with_output_limit(50)
            .build()
            .unwrap();
        let result = server.call("numbers", json!({ "count": 1000 })).await;
        assert!(result.success);
        assert_eq!(
            result.output.as_array().unwrap().len(),
            1000,
            "the data stays whole"
        );
        let text = result.model_text();
        assert!(text.chars().count() <= 50, "{text}");
        assert!(text.contains("more items (1000 in all)"), "{text}");

        let short = server.call("numbers", json!({ "count": 3 })).await;
        assert!(
            short.content.is_empty(),
            "output within the limit is left alone"
        );
        assert_eq!(short.model_text(), "[0,1,2]");

        let essay = server.call("essay", json!({ "words": 100 })).await;
        assert!(essay.model_text().ends_with("more characters]"));
    }
}
