//! TypeScript declarations of the tools code may call, made from their input and output
//! schemas and their docs: what code mode's description tells the model it can call.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::tool::ToolDefinition;

/// How deep a schema is followed before its type is given as `unknown`.
const MAX_DEPTH: usize = 12;

/// How many schema nodes one tool's declaration visits (references are expanded where they
/// are used, so a schema can name far more than it holds); past it, types are `unknown`.
const NODE_BUDGET: usize = 2_000;

/// How long the declarations may grow; the tools past it are named, not declared.
const MAX_LENGTH: usize = 64 * 1024;

/// `declare const tools: { … };` with one method per tool, each with its description.
pub(super) fn declarations<'a>(tools: impl IntoIterator<Item = &'a ToolDefinition>) -> String {
    let mut out = String::from("declare const tools: {\n");
    let mut left_out = Vec::new();
    for tool in tools {
        if out.len() > MAX_LENGTH {
            left_out.push(property_name(&tool.name));
            continue;
        }
        doc(&mut out, "  ", &tool.description);
        let input = Types::new(&tool.parameters).of(&tool.parameters, 1);
        // Arguments that are all optional may be left out.
        let optional = match tool.parameters.get("required") {
            Some(Value::Array(required)) => required.is_empty(),
            _ => true,
        };
        let args = if optional { "args?" } else { "args" };
        let output = tool.output_schema.as_ref().map_or_else(
            || "unknown".to_owned(),
            |schema| Types::new(schema).of(schema, 1),
        );
        let _ = writeln!(
            out,
            "  {}({args}: {input}): Promise<{output}>;",
            property_name(&tool.name)
        );
    }
    if !left_out.is_empty() {
        let _ = writeln!(
            out,
            "  // {} more, not declared here to keep this short: {}",
            left_out.len(),
            left_out.join(", ")
        );
    }
    out.push_str("};");
    out
}

/// Writes `text` as a `JSDoc` comment at `indent`; nothing for empty text.
fn doc(out: &mut String, indent: &str, text: &str) {
    let text = text.trim().replace("*/", "*\\/");
    if text.is_empty() {
        return;
    }
    if !text.contains('\n') {
        let _ = writeln!(out, "{indent}/** {text} */");
        return;
    }
    let _ = writeln!(out, "{indent}/**");
    for line in text.lines() {
        let _ = writeln!(out, "{}", format!("{indent} * {line}").trim_end());
    }
    let _ = writeln!(out, "{indent} */");
}

/// A property name as TypeScript takes it: bare when it is an identifier, else quoted.
fn property_name(name: &str) -> String {
    let mut chars = name.chars();
    let identifier = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier {
        name.to_owned()
    } else {
        Value::String(name.to_owned()).to_string()
    }
}

/// Turns one root schema's parts into TypeScript types, following its local `$ref`s.
struct Types<'s> {
    root: &'s Value,
    /// The references being expanded, to stop at a type that contains itself.
    expanding: Vec<&'s str>,
    /// Schema nodes this declaration may still visit.
    budget: usize,
}

impl<'s> Types<'s> {
    fn new(root: &'s Value) -> Self {
        Self {
            root,
            expanding: Vec::new(),
            budget: NODE_BUDGET,
        }
    }

    /// The type of `schema`, written at nesting `level` (for indenting object members).
    fn of(&mut self, schema: &'s Value, level: usize) -> String {
        if level > MAX_DEPTH || self.budget == 0 {
            return "unknown".to_owned();
        }
        self.budget -= 1;
        let object = match schema {
            Value::Bool(false) => return "never".to_owned(),
            Value::Object(object) => object,
            _ => return "unknown".to_owned(),
        };
        if let Some(Value::String(reference)) = object.get("$ref") {
            return self.reference(reference, level);
        }
        if let Some(value) = object.get("const") {
            return value.to_string();
        }
        if let Some(Value::Array(values)) = object.get("enum") {
            return union(values.iter().map(Value::to_string));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(options)) = object.get(key) {
                let options: Vec<String> = options.iter().map(|o| self.of(o, level)).collect();
                return union(options);
            }
        }
        if let Some(Value::Array(parts)) = object.get("allOf") {
            let parts: Vec<String> = parts.iter().map(|p| self.of(p, level)).collect();
            return match parts.as_slice() {
                [one] => one.clone(),
                _ => parts
                    .iter()
                    .map(|p| format!("({p})"))
                    .collect::<Vec<_>>()
                    .join(" & "),
            };
        }
        let nullable = object.get("nullable") == Some(&Value::Bool(true));
        let written = match object.get("type") {
            Some(Value::String(ty)) => self.typed(ty, object, level),
            Some(Value::Array(types)) => union(
                types
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|ty| self.typed(ty, object, level)),
            ),
            _ if object.contains_key("properties") => self.typed("object", object, level),
            _ if object.contains_key("items") => self.typed("array", object, level),
            _ => "unknown".to_owned(),
        };
        if nullable {
            union([written, "null".to_owned()])
        } else {
            written
        }
    }

    fn reference(&mut self, reference: &'s str, level: usize) -> String {
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| self.root.pointer(pointer));
        match target {
            Some(target) if !self.expanding.contains(&reference) => {
                self.expanding.push(reference);
                let written = self.of(target, level);
                self.expanding.pop();
                written
            }
            _ => "unknown".to_owned(),
        }
    }

    fn typed(&mut self, ty: &str, object: &'s Map<String, Value>, level: usize) -> String {
        match ty {
            "string" => "string".to_owned(),
            "integer" | "number" => "number".to_owned(),
            "boolean" => "boolean".to_owned(),
            "null" => "null".to_owned(),
            "array" => self.array(object, level),
            "object" => self.object(object, level),
            _ => "unknown".to_owned(),
        }
    }

    fn array(&mut self, object: &'s Map<String, Value>, level: usize) -> String {
        if let Some(Value::Array(items)) = object.get("prefixItems") {
            let items: Vec<String> = items.iter().map(|i| self.of(i, level)).collect();
            return format!("[{}]", items.join(", "));
        }
        match object.get("items") {
            Some(items) => {
                let item = self.of(items, level);
                if item.contains(['|', '&']) {
                    format!("({item})[]")
                } else {
                    format!("{item}[]")
                }
            }
            None => "unknown[]".to_owned(),
        }
    }

    fn object(&mut self, object: &'s Map<String, Value>, level: usize) -> String {
        let extra = match object.get("additionalProperties") {
            Some(Value::Bool(false)) => None,
            Some(schema @ Value::Object(_)) => Some(self.of(schema, level + 1)),
            _ => Some("unknown".to_owned()),
        };
        let properties = match object.get("properties") {
            Some(Value::Object(properties)) if !properties.is_empty() => properties,
            // Named properties, none of them: an object to send empty.
            Some(_) if extra.as_ref().is_none_or(|value| value == "unknown") => {
                return "{}".to_owned();
            }
            _ => {
                return match extra {
                    None => "{}".to_owned(),
                    Some(value) => format!("Record<string, {value}>"),
                };
            }
        };
        let required: Vec<&str> = match object.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let indent = "  ".repeat(level + 1);
        let mut out = String::from("{\n");
        for (name, schema) in properties {
            if let Some(Value::String(description)) = schema.get("description") {
                doc(&mut out, &indent, description);
            }
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            let ty = self.of(schema, level + 1);
            let _ = writeln!(out, "{indent}{}{optional}: {ty};", property_name(name));
        }
        // Extra keys are left out of the declaration unless they have a type of their own:
        // the model should send the named ones.
        if let Some(value) = extra.filter(|value| value != "unknown") {
            let _ = writeln!(out, "{indent}[key: string]: {value};");
        }
        let _ = write!(out, "{}}}", "  ".repeat(level));
        out
    }
}

/// `a | b | c`, each part once; `never` for none.
fn union(parts: impl IntoIterator<Item = String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for part in parts {
        if !seen.contains(&part) {
            seen.push(part);
        }
    }
    match seen.len() {
        0 => "never".to_owned(),
        _ => seen.join(" | "),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(parameters: Value, output: Option<Value>) -> ToolDefinition {
        let mut definition = ToolDefinition::new("get_weather", "Get the weather.", parameters);
        definition.output_schema = output;
        definition
    }

    #[test]
    fn arguments_and_output_become_a_method() {
        let definition = tool(
            json!({
                "type": "object",
                "properties": {
                    "city": { "type": "string", "description": "City name" },
                    "units": { "enum": ["metric", "imperial"] },
                    "days": { "type": ["integer", "null"] }
                },
                "required": ["city"]
            }),
            Some(json!({
                "type": "object",
                "properties": { "temp": { "type": "number" }, "tags": { "type": "array", "items": { "type": "string" } } },
                "required": ["temp", "tags"]
            })),
        );
        let text = declarations([&definition]);
        assert!(text.contains("/** Get the weather. */"), "{text}");
        assert!(text.contains("get_weather(args: {"), "{text}");
        assert!(
            text.contains("/** City name */\n    city: string;"),
            "{text}"
        );
        assert!(
            text.contains("units?: \"metric\" | \"imperial\";"),
            "{text}"
        );
        assert!(text.contains("days?: number | null;"), "{text}");
        assert!(text.contains("temp: number;"), "{text}");
        assert!(text.contains("tags: string[];"), "{text}");
    }

    #[test]
    fn references_are_followed_and_a_cycle_stops() {
        let definition = tool(
            json!({
                "type": "object",
                "properties": { "node": { "$ref": "#/$defs/Node" } },
                "required": ["node"],
                "$defs": {
                    "Node": {
                        "type": "object",
                        "properties": { "next": { "anyOf": [{ "$ref": "#/$defs/Node" }, { "type": "null" }] } }
                    }
                }
            }),
            None,
        );
        let text = declarations([&definition]);
        assert!(text.contains("next?: unknown | null;"), "{text}");
        assert!(text.contains("Promise<unknown>"), "{text}");
    }

    #[test]
    fn a_schema_that_names_itself_over_and_over_stays_small() {
        // Forty definitions, each naming the next twice: 2^40 paths if followed naively.
        let mut defs = Map::new();
        for i in 0..40 {
            let next = json!({ "$ref": format!("#/$defs/D{}", i + 1) });
            defs.insert(format!("D{i}"), json!({ "anyOf": [next.clone(), { "type": "object", "properties": { "a": next, "b": { "$ref": format!("#/$defs/D{}", i + 1) } } }] }));
        }
        defs.insert("D40".to_owned(), json!({ "type": "string" }));
        let definition = tool(
            json!({ "type": "object", "properties": { "d": { "$ref": "#/$defs/D0" } }, "$defs": defs }),
            None,
        );
        let text = declarations([&definition]);
        assert!(text.len() < 200_000, "{}", text.len());
        assert!(text.contains("unknown"));
    }

    #[test]
    fn declarations_past_the_length_name_the_rest() {
        let long = "word ".repeat(4_000);
        let tools: Vec<ToolDefinition> = (0..40)
            .map(|i| {
                let mut definition = tool(json!({ "type": "object", "properties": {} }), None);
                definition.name = format!("tool_{i}");
                definition.description.clone_from(&long);
                definition
            })
            .collect();
        let text = declarations(&tools);
        assert!(text.len() < MAX_LENGTH + 30_000, "{}", text.len());
        assert!(
            text.contains("more, not declared here"),
            "{}",
            &text[text.len() - 200..]
        );
        assert!(text.contains("tool_39"));
    }

    #[test]
    fn odd_names_are_quoted_and_comments_cannot_be_closed() {
        let mut definition = tool(
            json!({ "type": "object", "properties": { "a-b": { "type": "string", "description": "x */ y" } } }),
            None,
        );
        definition.name = "weird-name".to_owned();
        let text = declarations([&definition]);
        assert!(text.contains("\"weird-name\"(args"), "{text}");
        assert!(text.contains("\"a-b\"?: string;"), "{text}");
        assert!(text.contains("x *\\/ y"), "{text}");
    }
}
