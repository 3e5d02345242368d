//! Results with images and other content blocks, answered in each provider's format: the
//! blocks an API documents for tool results reach it natively, the rest as text.

use aleph_tools::Content;

use super::*;

/// The eight bytes every PNG file starts with.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";
const PNG_BASE64: &str = "iVBORw0KGgo=";
/// `%PDF-`, base64.
const PDF_BASE64: &str = "JVBERi0=";

/// Draw the chart of a series.
#[tool(register = false)]
fn chart(
    /// The series to draw
    series: String,
) -> ToolOutput {
    ToolOutput::text(format!("Chart of {series}:"))
        .with_image(PNG, "image/png")
        .with(Content::audio([0, 1], "audio/wav"))
        .with(Content::embedded_blob(
            "file:///reports/q3.pdf",
            "application/pdf",
            b"%PDF-",
        ))
        .with(Content::image([7], "image/bmp"))
        .with_data(json!({ "points": 12 }))
}

fn media_server() -> AlephToolServer {
    AlephToolServer::builder()
        .with_tool(ChartTool)
        .with_tool(AddTool)
        .build()
        .unwrap()
}

/// The description of the blocks no provider here takes natively.
const AUDIO: &str = "[audio: audio/wav, 2 bytes]";
const BMP: &str = "[image: image/bmp, 1 bytes]";

#[tokio::test]
async fn openai_chat_reads_every_block_as_text() {
    let response = json!({ "choices": [{ "message": { "role": "assistant", "tool_calls": [
        { "id": "call_1", "type": "function", "function": { "name": "chart", "arguments": "{\"series\":\"sales\"}" } }
    ] } }] });
    let round = round(&media_server(), Provider::OpenAiChat, response).await;
    assert_eq!(
        round.messages,
        [json!({
            "role": "tool",
            "tool_call_id": "call_1",
            "content": format!(
                "Chart of sales:\n[image: image/png, 8 bytes]\n{AUDIO}\n\
                 [resource: file:///reports/q3.pdf, application/pdf, 5 bytes]\n{BMP}"
            ),
        })]
    );
}

#[tokio::test]
async fn openai_responses_get_input_image_and_input_file() {
    let response = json!({ "output": [
        { "type": "function_call", "call_id": "call_1", "name": "chart", "arguments": "{\"series\":\"sales\"}" },
        { "type": "function_call", "call_id": "call_2", "name": "add", "arguments": "{\"a\":1,\"b\":2}" }
    ] });
    let round = round(&media_server(), Provider::OpenAiResponses, response).await;
    assert_eq!(
        round.messages,
        [
            json!({ "type": "function_call_output", "call_id": "call_1", "output": [
                { "type": "input_text", "text": "Chart of sales:" },
                { "type": "input_image", "image_url": format!("data:image/png;base64,{PNG_BASE64}") },
                { "type": "input_text", "text": AUDIO },
                { "type": "input_file", "filename": "q3.pdf",
                  "file_data": format!("data:application/pdf;base64,{PDF_BASE64}") },
                { "type": "input_text", "text": BMP }
            ] }),
            // A result without media stays a string.
            json!({ "type": "function_call_output", "call_id": "call_2", "output": "3" }),
        ]
    );
}

#[tokio::test]
async fn anthropic_gets_image_and_document_blocks() {
    let response = json!({ "content": [
        { "type": "tool_use", "id": "toolu_1", "name": "chart", "input": { "series": "sales" } }
    ] });
    let round = round(&media_server(), Provider::Anthropic, response).await;
    assert_eq!(
        round.messages,
        [json!({ "role": "user", "content": [{
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": [
                { "type": "text", "text": "Chart of sales:" },
                { "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": PNG_BASE64 } },
                { "type": "text", "text": AUDIO },
                { "type": "document", "source": { "type": "base64", "media_type": "application/pdf", "data": PDF_BASE64 } },
                { "type": "text", "text": BMP }
            ]
        }] })]
    );
}

#[tokio::test]
async fn gemini_gets_inline_data_parts() {
    let response = json!({ "candidates": [{ "content": { "role": "model", "parts": [
        { "functionCall": { "id": "fc_1", "name": "chart", "args": { "series": "sales" } } }
    ] } }] });
    let round = round(&media_server(), Provider::Gemini, response).await;
    assert_eq!(
        round.messages,
        [json!({ "role": "user", "parts": [{ "functionResponse": {
            "name": "chart",
            "id": "fc_1",
            "response": { "output": format!("Chart of sales:\n{AUDIO}\n{BMP}") },
            "parts": [
                { "inlineData": { "mimeType": "image/png", "data": PNG_BASE64 } },
                { "inlineData": { "mimeType": "application/pdf", "data": PDF_BASE64 } }
            ]
        } }] })]
    );
}

#[tokio::test]
async fn mcp_gets_the_blocks_as_they_are() {
    let request = json!({ "name": "chart", "arguments": { "series": "sales" } });
    let round = round(&media_server(), Provider::Mcp, request).await;
    assert_eq!(
        round.messages,
        [json!({
            "content": [
                { "type": "text", "text": "Chart of sales:" },
                { "type": "image", "data": PNG_BASE64, "mimeType": "image/png" },
                { "type": "audio", "data": "AAE=", "mimeType": "audio/wav" },
                { "type": "resource", "resource": {
                    "uri": "file:///reports/q3.pdf", "mimeType": "application/pdf", "blob": PDF_BASE64 } },
                { "type": "image", "data": "Bw==", "mimeType": "image/bmp" }
            ],
            "structuredContent": { "points": 12 },
            "isError": false
        })]
    );
}

#[tokio::test]
async fn a_failed_call_sends_only_its_message() {
    let response = json!({ "content": [
        { "type": "tool_use", "id": "toolu_1", "name": "chart", "input": { "series": 3 } }
    ] });
    let round = round(&media_server(), Provider::Anthropic, response).await;
    let block = &round.messages[0]["content"][0];
    assert_eq!(block["is_error"], true);
    assert!(
        block["content"].as_str().unwrap().contains("/series"),
        "{block}"
    );
}
