//! How big each provider's tools array is.

use super::*;

#[test]
fn size_report_covers_every_provider() {
    let server = server();
    let sizes = server.tools().sizes();
    assert_eq!(sizes.len(), Provider::ALL.len());
    for (size, provider) in sizes.iter().zip(Provider::ALL) {
        assert_eq!(size.provider, provider);
        assert_eq!(size.tools, 3);
        let list = server.tools().for_provider(provider);
        assert_eq!(size.bytes, list.to_string().len());
        assert!(
            size.tokens > size.bytes / 8 && size.tokens < size.bytes,
            "{size:?}"
        );
    }
}

#[test]
fn token_estimate_counts_words_digits_and_marks() {
    assert_eq!(estimate_tokens(""), 0);
    assert_eq!(estimate_tokens("hello"), 1);
    assert_eq!(estimate_tokens("hello world"), 2);
    assert_eq!(estimate_tokens("123456"), 2);
    assert_eq!(estimate_tokens("\":\""), 2);
    assert_eq!(estimate_tokens("héllo"), 3);
    assert!(estimate_tokens(&"a".repeat(70)) == 10);
}

#[test]
fn sharing_defs_makes_a_list_with_repeated_types_smaller() {
    #[derive(Deserialize, JsonSchema)]
    struct Address {
        /// Street and number
        street: String,
        /// City name
        city: String,
        /// Postal code
        postal_code: String,
        /// ISO country code
        country: String,
    }
    /// Ship a parcel.
    #[tool(register = false)]
    fn ship(from: Address, to: Address, return_to: Option<Address>) -> String {
        let _ = (
            from.street,
            from.postal_code,
            to.city,
            return_to.map(|r| r.country),
        );
        "shipped".to_owned()
    }
    let definition = ShipTool.definition();
    let size = |dialect: Dialect| {
        let list = Provider::Mcp.tool_list([&definition], dialect).unwrap();
        SizeReport::measure(Provider::Mcp, &list)
    };
    let inline = size(Dialect::MCP);
    let smallest = size(Dialect::Mcp {
        refs: aleph_tools::schema::Refs::Smallest,
    });
    assert!(smallest.bytes < inline.bytes, "{smallest:?} vs {inline:?}");
    assert!(smallest.tokens < inline.tokens);
}
