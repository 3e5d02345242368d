//! The tools array for each provider.

use super::*;

#[test]
fn openai_chat_tools_are_function_entries_strict_where_possible() {
    let tools = server().tools().for_provider(Provider::OpenAiChat);
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["add", "get_weather", "label"], "sorted by name");
    for tool in tools.as_array().unwrap() {
        assert_eq!(tool["type"], "function");
        let function = &tool["function"];
        assert!(
            function["description"]
                .as_str()
                .is_some_and(|d| !d.is_empty())
        );
        assert_eq!(function["parameters"]["type"], "object");
    }
    let weather = &tools[1]["function"];
    assert_eq!(weather["strict"], true);
    assert_eq!(
        weather["parameters"]["required"],
        json!(["city", "decimals", "unit"])
    );
    assert_eq!(weather["parameters"]["additionalProperties"], false);
    // A map cannot be strict: that tool goes without strict mode, with its plain schema.
    let label = &tools[2]["function"];
    assert_eq!(label["strict"], false);
    assert_eq!(
        label["parameters"]["properties"]["labels"]["additionalProperties"]["type"],
        "string"
    );
}

#[test]
fn openai_responses_tools_are_flat_function_entries() {
    let tools = server().tools().for_provider(Provider::OpenAiResponses);
    let add = &tools[0];
    assert_eq!(add["type"], "function");
    assert_eq!(add["name"], "add");
    assert_eq!(add["strict"], true);
    assert_eq!(add["parameters"]["required"], json!(["a", "b"]));
    assert!(add.get("function").is_none());
}

#[test]
fn anthropic_tools_carry_input_schema() {
    let tools = server().tools().for_provider(Provider::Anthropic);
    let weather = &tools[1];
    assert_eq!(
        weather.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["description", "input_schema", "name"]
    );
    assert_eq!(weather["input_schema"]["required"], json!(["city"]));
    // Optional arguments are optional by `required`, without a null branch.
    assert!(
        weather["input_schema"]["properties"]["unit"]
            .get("anyOf")
            .is_none()
    );
}

#[test]
fn gemini_tools_are_one_entry_of_function_declarations() {
    let server = builder().with_tool(NoArgsTool).build().unwrap();
    let tools = server.tools().for_provider(Provider::Gemini);
    let tools = tools.as_array().unwrap();
    assert_eq!(tools.len(), 1);
    let declarations = tools[0]["functionDeclarations"].as_array().unwrap();
    assert_eq!(declarations.len(), 4);
    let weather = declarations
        .iter()
        .find(|d| d["name"] == "get_weather")
        .unwrap();
    assert_eq!(weather["parameters"]["type"], "OBJECT");
    assert_eq!(
        weather["parameters"]["properties"]["unit"]["enum"],
        json!(["celsius", "fahrenheit"])
    );
    // Gemini refuses an OBJECT without properties: no `parameters` for a tool without any.
    let ping = declarations
        .iter()
        .find(|d| d["name"] == "no_args")
        .unwrap();
    assert!(ping.get("parameters").is_none());
}

/// Answer with nothing.
#[tool(register = false)]
fn no_args() -> &'static str {
    "pong"
}

#[test]
fn mcp_tools_carry_output_schemas_and_annotations() {
    let tools = server().tools().for_provider(Provider::Mcp);
    let weather = &tools[1];
    assert_eq!(weather["inputSchema"]["type"], "object");
    assert!(
        !weather["inputSchema"].to_string().contains("$ref"),
        "inlined by default"
    );
    assert_eq!(weather["outputSchema"]["type"], "object");
    assert_eq!(
        weather["outputSchema"]["properties"]["unit"]["enum"],
        json!(["celsius", "fahrenheit"])
    );
    assert_eq!(
        weather["annotations"],
        json!({ "readOnlyHint": true, "openWorldHint": true })
    );
    // An output that is not an object is wrapped, as MCP wants an object.
    let add = &tools[0];
    assert_eq!(
        add["outputSchema"]["properties"]["result"]["type"],
        "integer"
    );
    assert_eq!(add["outputSchema"]["required"], json!(["result"]));
    assert_eq!(add["annotations"], json!({ "idempotentHint": true }));
}

#[test]
fn filtered_tools_are_left_out_of_every_list() {
    let server = builder()
        .with_filter(ToolFilter::from_json(r#"{ "blocked": ["label"] }"#).unwrap())
        .build()
        .unwrap();
    for provider in Provider::ALL {
        let tools = server.tools().for_provider(provider);
        assert!(
            !tools.to_string().contains("\"label\""),
            "{provider:?}: {tools}"
        );
    }
}

#[test]
fn strict_tools_whose_schema_cannot_be_strict_are_refused() {
    #[derive(Deserialize, JsonSchema)]
    struct Options {
        extra: HashMap<String, String>,
    }
    /// Strict, with a map hidden inside a struct.
    #[tool(register = false, strict)]
    fn hidden_map(options: Options) -> usize {
        options.extra.len()
    }
    let err = AlephToolServer::builder()
        .with_tool(HiddenMapTool)
        .build()
        .err()
        .unwrap();
    let RegistryError::InvalidDefinition { name, reason } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(name, "hidden_map");
    assert!(
        reason.contains("/properties/options/properties/extra")
            || reason.contains("/$defs/Options/properties/extra"),
        "{reason}"
    );
    let err = AlephToolServer::new().add(HiddenMapTool).unwrap_err();
    assert!(err.to_string().contains("strict"), "{err}");
}

/// A tree, which Gemini's schema subset cannot describe (it has no `$ref`).
#[derive(Deserialize, JsonSchema)]
struct Node {
    name: String,
    children: Vec<Node>,
}

/// Store a tree.
#[tool(register = false)]
fn store_tree(root: Node) -> usize {
    root.children.len() + usize::from(!root.name.is_empty())
}

#[tokio::test]
async fn a_tool_a_provider_cannot_take_is_quarantined_not_fatal() {
    let server = AlephToolServer::builder()
        .with_tool(StoreTreeTool)
        .with_tool(AddTool)
        .with_providers([Provider::Gemini, Provider::OpenAiChat])
        .build()
        .unwrap();
    // Reported once, with the tool, the provider and the rule.
    let misfits = server.tools().incompatible();
    assert_eq!(misfits.len(), 1, "{misfits:?}");
    assert_eq!(misfits[0].tool, "store_tree");
    assert_eq!(misfits[0].provider, Provider::Gemini);
    assert!(
        misfits[0].to_string().contains("recursive type `Node`"),
        "{}",
        misfits[0]
    );
    // Gemini gets every other tool; the others get all of them.
    let gemini = server.tools().for_provider(Provider::Gemini);
    let declared = &gemini[0]["functionDeclarations"];
    assert_eq!(declared.as_array().unwrap().len(), 1);
    assert_eq!(declared[0]["name"], "add");
    for provider in [Provider::OpenAiChat, Provider::Anthropic, Provider::Mcp] {
        let tools = server.tools().for_provider(provider);
        assert!(
            tools.to_string().contains("#/$defs/Node"),
            "{provider:?} keeps the recursion as a $ref"
        );
    }
    // The tool is still served and callable.
    let stored = server
        .call(
            "store_tree",
            json!({ "root": { "name": "r", "children": [] } }),
        )
        .await;
    assert_eq!(stored.output, json!(1));
    // A tool added later is checked the same way, and removing it clears the report.
    server.remove("store_tree");
    assert!(server.tools().incompatible().is_empty());
    server.add(StoreTreeTool).unwrap();
    assert_eq!(server.tools().incompatible().len(), 1);
}

#[test]
fn without_configured_providers_a_misfit_is_only_left_out() {
    let server = AlephToolServer::builder()
        .with_tool(StoreTreeTool)
        .with_tool(AddTool)
        .build()
        .unwrap();
    assert!(server.tools().incompatible().is_empty());
    let gemini = server.tools().for_provider(Provider::Gemini);
    assert_eq!(gemini[0]["functionDeclarations"][0]["name"], "add");
    let sizes = server.tools().sizes();
    let gemini_size = sizes
        .iter()
        .find(|s| s.provider == Provider::Gemini)
        .unwrap();
    assert_eq!(gemini_size.tools, 1);
}

#[test]
fn the_error_policy_refuses_a_misfit() {
    let err = AlephToolServer::builder()
        .with_tool(AddTool)
        .with_tool(StoreTreeTool)
        .with_providers([Provider::Gemini])
        .on_incompatible(IncompatibleTools::Error)
        .build()
        .unwrap_err();
    let RegistryError::Incompatible(misfit) = &err else {
        panic!("unexpected {err:?}");
    };
    assert_eq!(
        (misfit.tool.as_str(), misfit.provider),
        ("store_tree", Provider::Gemini)
    );
    assert!(
        err.to_string().contains("cannot be offered to gemini"),
        "{err}"
    );
    let server = AlephToolServer::builder()
        .with_providers([Provider::Gemini])
        .on_incompatible(IncompatibleTools::Error)
        .build()
        .unwrap();
    assert!(matches!(
        server.add(StoreTreeTool),
        Err(RegistryError::Incompatible(_))
    ));
    assert!(server.is_empty());
}

#[test]
fn a_tools_array_is_built_once_until_the_tools_or_the_filter_change() {
    let server = server();
    for provider in Provider::ALL {
        let first = server.tools().for_provider(provider);
        assert!(
            Arc::ptr_eq(&first, &server.tools().for_provider(provider)),
            "{}: asked again, the same array",
            provider.name()
        );
    }
    let names = |server: &AlephToolServer| -> Vec<String> {
        server
            .tools()
            .for_provider(Provider::Anthropic)
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&server), ["add", "get_weather", "label"]);
    let before = server.tools().for_provider(Provider::Anthropic);

    server.remove("label");
    assert_eq!(names(&server), ["add", "get_weather"]);
    server.set_filter(ToolFilter::new().block("add")).unwrap();
    assert_eq!(names(&server), ["get_weather"]);
    server.set_filter(ToolFilter::new()).unwrap();
    assert_eq!(names(&server), ["add", "get_weather"]);
    let shout = aleph_tools::RuntimeTool::new(
        ToolDefinition::new(
            "shout",
            "Shout.",
            json!({ "type": "object", "properties": {} }),
        ),
        |_: Value, _: ToolContext| async { Ok::<_, ToolError>(ToolOutput::text("HEY")) },
    );
    server.add(shout).unwrap();
    assert_eq!(names(&server), ["add", "get_weather", "shout"]);
    let replaced = aleph_tools::RuntimeTool::new(
        ToolDefinition::new(
            "shout",
            "Shout louder.",
            json!({ "type": "object", "properties": {} }),
        ),
        |_: Value, _: ToolContext| async { Ok::<_, ToolError>(ToolOutput::text("HEY!")) },
    );
    server.replace(replaced).unwrap();
    let list = server.tools().for_provider(Provider::Anthropic);
    assert_eq!(list[2]["description"], "Shout louder.");
    // The array handed out before the changes is the array as it was.
    assert_eq!(before.as_array().unwrap().len(), 3);
}

#[test]
fn arrays_asked_for_while_tools_change_are_never_stale() {
    let server = server();
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            for i in 0..200 {
                let name = format!("tool_{i}");
                let tool = aleph_tools::RuntimeTool::new(
                    ToolDefinition::new(
                        name.clone(),
                        "A tool.",
                        json!({ "type": "object", "properties": {} }),
                    ),
                    |_: Value, _: ToolContext| async { Ok::<_, ToolError>(ToolOutput::text("")) },
                );
                server.add(tool).unwrap();
                if i % 2 == 0 {
                    server.remove(&name);
                }
            }
        });
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..300 {
                    let _ = server.tools().for_provider(Provider::OpenAiChat);
                }
            });
        }
        writer.join().unwrap();
    });
    let listed = server
        .tools()
        .for_provider(Provider::OpenAiChat)
        .as_array()
        .unwrap()
        .len();
    assert_eq!(listed, server.tools().names().len());
    assert_eq!(listed, 3 + 100);
}
