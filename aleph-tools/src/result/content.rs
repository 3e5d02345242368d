//! Content blocks: the text, images, audio and resources a result holds, in MCP's shape.

use std::borrow::Cow;
use std::fmt::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One block of what a tool hands back for the model (or the user) to see.
///
/// The shapes are MCP's `ContentBlock`s, and a block serializes exactly as MCP writes it
/// (`{"type": "image", "data": …, "mimeType": …}`), but for [`ToolReference`](Self::ToolReference),
/// which MCP lacks and its clients get as a line of text. MCP clients get the other blocks
/// as they are;
/// each model API gets what it accepts (see
/// [`Provider::result_messages`](crate::provider::Provider::result_messages)), and a
/// provider that cannot take a block reads a short description of it instead
/// ([`describe`](Self::describe)).
///
/// ```
/// use aleph_tools::Content;
///
/// let png = Content::image(b"\x89PNG\r\n\x1a\n", "image/png");
/// assert_eq!(png.describe(), "[image: image/png, 8 bytes]");
/// let json = serde_json::to_value(&png).unwrap();
/// assert_eq!(json["type"], "image");
/// assert_eq!(json["mimeType"], "image/png");
/// assert_eq!(json["data"], "iVBORw0KGgo=");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Text.
    Text(TextContent),
    /// An image, base64-encoded.
    Image(MediaContent),
    /// A sound, base64-encoded.
    Audio(MediaContent),
    /// A pointer to a resource the client can fetch itself.
    ResourceLink(ResourceLink),
    /// A resource's contents, carried inline.
    Resource(EmbeddedResource),
    /// A tool the model may call from now on: a tool search's answer. Anthropic's API reads
    /// it as a `tool_reference` block and loads the deferred tool's definition itself; for
    /// every other reader it is a line naming the tool.
    ToolReference(ToolReference),
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent {
            text: text.into(),
            annotations: None,
            meta: None,
        })
    }

    /// An image from its bytes and MIME type (`image/png`, `image/jpeg`, …).
    pub fn image(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Self::Image(MediaContent::encode(bytes.as_ref(), mime_type.into()))
    }

    /// An image already in base64, as MCP servers send them. The text is kept as given.
    pub fn image_base64(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Image(MediaContent::new(data.into(), mime_type.into()))
    }

    /// A sound from its bytes and MIME type (`audio/wav`, `audio/mpeg`, …).
    pub fn audio(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Self::Audio(MediaContent::encode(bytes.as_ref(), mime_type.into()))
    }

    /// A sound already in base64. The text is kept as given.
    pub fn audio_base64(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Audio(MediaContent::new(data.into(), mime_type.into()))
    }

    /// A link to the resource at `uri`, called `name`.
    /// [`ResourceLink::new`] with its builder methods says more.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::ResourceLink(ResourceLink::new(uri, name))
    }

    /// A text resource carried inline: its URI, MIME type and text.
    pub fn embedded_text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self::embedded(ResourceContents::text(uri, mime_type, text))
    }

    /// A binary resource carried inline: its URI, MIME type and bytes.
    pub fn embedded_blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        bytes: impl AsRef<[u8]>,
    ) -> Self {
        Self::embedded(ResourceContents::blob(uri, mime_type, bytes))
    }

    /// A resource's contents carried inline, as read from it.
    pub fn embedded(resource: ResourceContents) -> Self {
        Self::Resource(EmbeddedResource {
            resource,
            annotations: None,
            meta: None,
        })
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(block) => Some(&block.text),
            _ => None,
        }
    }

    /// The block as a model that reads only text sees it: a text block's text, an embedded
    /// text resource's URI and text, and for anything else a bracketed line naming it
    /// (`[image: image/png, 5120 bytes]`).
    pub fn describe(&self) -> Cow<'_, str> {
        let mut out = String::new();
        let _ = match self {
            Self::Text(block) => return Cow::Borrowed(&block.text),
            Self::Image(media) => {
                write!(out, "[image: {}, {} bytes]", media.mime_type, media.len())
            }
            Self::Audio(media) => {
                write!(out, "[audio: {}, {} bytes]", media.mime_type, media.len())
            }
            Self::ResourceLink(link) => match &link.description {
                Some(description) => write!(
                    out,
                    "[resource link: {} <{}>: {description}]",
                    link.name, link.uri
                ),
                None => write!(out, "[resource link: {} <{}>]", link.name, link.uri),
            },
            Self::ToolReference(reference) => write!(out, "[tool: {}]", reference.tool_name),
            Self::Resource(embedded) => {
                let resource = &embedded.resource;
                match &resource.body {
                    ResourceBody::Text(text) => write!(out, "[resource: {}]\n{text}", resource.uri),
                    ResourceBody::Blob(blob) => write!(
                        out,
                        "[resource: {}, {}, {} bytes]",
                        resource.uri,
                        resource.mime_type.as_deref().unwrap_or("binary"),
                        decoded_len(blob)
                    ),
                }
            }
        };
        Cow::Owned(out)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

/// A tool a search found, by name (see [`Content::ToolReference`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolReference {
    /// The tool's name.
    pub tool_name: String,
}

impl ToolReference {
    /// A reference to the tool `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            tool_name: name.into(),
        }
    }
}

/// A text block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// MCP annotations (`audience`, `priority`, `lastModified`), passed on as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// MCP `_meta`, passed on as it is.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// An image or a sound: base64 data and its MIME type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct MediaContent {
    /// The bytes, base64-encoded (standard alphabet, padded).
    pub data: String,
    /// The MIME type, such as `image/png` or `audio/wav`.
    pub mime_type: String,
    /// MCP annotations, passed on as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// MCP `_meta`, passed on as it is.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl MediaContent {
    fn new(data: String, mime_type: String) -> Self {
        Self {
            data,
            mime_type,
            annotations: None,
            meta: None,
        }
    }

    fn encode(bytes: &[u8], mime_type: String) -> Self {
        Self::new(BASE64.encode(bytes), mime_type)
    }

    /// The decoded bytes, or `None` when `data` is not valid base64.
    pub fn bytes(&self) -> Option<Vec<u8>> {
        BASE64.decode(&self.data).ok()
    }

    /// The number of bytes `data` encodes.
    pub fn len(&self) -> usize {
        decoded_len(&self.data)
    }

    /// Whether `data` encodes no bytes.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The data as a `data:` URL (`data:image/png;base64,…`), the form some model APIs take
    /// images in.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime_type, self.data)
    }
}

/// How many bytes a base64 text encodes (padding and line breaks aside).
fn decoded_len(base64: &str) -> usize {
    let symbols = base64
        .bytes()
        .filter(|byte| !matches!(byte, b'=' | b'\n' | b'\r'))
        .count();
    symbols * 3 / 4
}

/// A link to a resource the client can read or fetch itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A title for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// MCP annotations, passed on as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// MCP `_meta`, passed on as it is.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl ResourceLink {
    /// A link to the resource at `uri`, called `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
            meta: None,
        }
    }

    /// Adds what the resource holds.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Adds its MIME type.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

impl From<ResourceLink> for Content {
    fn from(link: ResourceLink) -> Self {
        Self::ResourceLink(link)
    }
}

/// A resource's contents carried in the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EmbeddedResource {
    /// The contents.
    pub resource: ResourceContents,
    /// MCP annotations, passed on as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// MCP `_meta`, passed on as it is.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// One resource's contents: its URI, MIME type, and text or bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its text or bytes.
    #[serde(flatten)]
    pub body: ResourceBody,
    /// MCP `_meta`, passed on as it is.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl ResourceContents {
    /// Text contents of the resource at `uri`.
    pub fn text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Text(text.into()),
            meta: None,
        }
    }

    /// Binary contents of the resource at `uri`, base64-encoded here.
    pub fn blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        bytes: impl AsRef<[u8]>,
    ) -> Self {
        Self {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Blob(BASE64.encode(bytes)),
            meta: None,
        }
    }
}

/// A resource's text, or its bytes in base64.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ResourceBody {
    /// Text (`"text": …` in MCP).
    Text(String),
    /// Bytes, base64-encoded (`"blob": …` in MCP).
    Blob(String),
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn blocks_read_and_write_mcp_json() {
        let blocks = json!([
            { "type": "text", "text": "Multiple content types test:" },
            { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png",
              "annotations": { "audience": ["user"] } },
            { "type": "audio", "data": "UklGRg==", "mimeType": "audio/wav" },
            { "type": "resource_link", "uri": "file:///a.txt", "name": "a.txt",
              "mimeType": "text/plain", "size": 12 },
            { "type": "resource", "resource": { "uri": "test://r", "mimeType": "application/json",
              "text": "{\"v\":1}" }, "_meta": { "k": true } },
            { "type": "resource", "resource": { "uri": "test://b", "blob": "AAEC" } }
        ]);
        let read: Vec<Content> = serde_json::from_value(blocks.clone()).unwrap();
        assert_eq!(read[0].as_text(), Some("Multiple content types test:"));
        assert!(
            matches!(&read[5], Content::Resource(r) if r.resource.body == ResourceBody::Blob("AAEC".into()))
        );
        assert_eq!(serde_json::to_value(&read).unwrap(), blocks);
    }

    #[test]
    fn constructors_encode_and_describe() {
        let bytes = [0_u8, 1, 2, 3, 4];
        let Content::Audio(audio) = Content::audio(bytes, "audio/wav") else {
            panic!("an audio block");
        };
        assert_eq!(audio.bytes().as_deref(), Some(&bytes[..]));
        assert_eq!(audio.len(), 5);
        assert_eq!(audio.data_url(), "data:audio/wav;base64,AAECAwQ=");
        assert_eq!(
            Content::embedded_blob("test://b", "application/pdf", [1, 2, 3]).describe(),
            "[resource: test://b, application/pdf, 3 bytes]"
        );
        assert_eq!(
            Content::embedded_text("test://t", "text/plain", "hello").describe(),
            "[resource: test://t]\nhello"
        );
        assert_eq!(
            Content::resource_link("file:///a", "a").describe(),
            "[resource link: a <file:///a>]"
        );
        assert_eq!(
            Content::image_base64("%%%", "image/png").describe(),
            "[image: image/png, 2 bytes]"
        );
        let Content::Image(broken) = Content::image_base64("%%%", "image/png") else {
            panic!("an image block");
        };
        assert_eq!(broken.bytes(), None);
    }

    #[test]
    fn unknown_block_types_are_refused() {
        let err = serde_json::from_value::<Content>(json!({ "type": "video", "data": "" }))
            .unwrap_err()
            .to_string();
        assert!(err.contains("video"), "{err}");
    }
}
