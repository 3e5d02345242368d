//! Two `#[tool]` functions with one name are a startup error naming both places. (Its own
//! test binary, so the duplicate is linked into nothing else.)

use aleph_tools::RegistryError;
use aleph_tools::prelude::*;

mod first {
    use aleph_tools::prelude::*;

    /// The first `lookup`.
    #[tool]
    pub fn lookup() -> u8 {
        1
    }
}

mod second {
    use aleph_tools::prelude::*;

    /// The second `lookup`, renamed into a clash.
    #[tool(name = "lookup")]
    pub fn find() -> u8 {
        2
    }
}

#[test]
fn duplicate_names_fail_from_registry_with_both_locations() {
    let err = AlephToolServer::from_registry().unwrap_err();
    let RegistryError::Duplicate {
        name,
        first,
        second,
    } = &err
    else {
        panic!("expected a duplicate error, got {err}");
    };
    assert_eq!(name, "lookup");
    let mut modules = [first.as_str(), second.as_str()];
    modules.sort_unstable();
    assert!(
        modules[0].contains("registry_duplicate.rs:")
            && modules[0].contains("(registry_duplicate::first)"),
        "{err}"
    );
    assert!(
        modules[1].contains("registry_duplicate.rs:")
            && modules[1].contains("(registry_duplicate::second)"),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.starts_with("two tools are named `lookup`: one at "),
        "{message}"
    );
    assert!(
        message.ends_with("rename one with `#[tool(name = \"...\")]`"),
        "{message}"
    );
}

#[test]
fn the_tools_themselves_still_work_one_by_one() {
    let server = AlephToolServer::builder()
        .with_tool(first::LookupTool)
        .build()
        .unwrap();
    assert_eq!(server.len(), 1);
    let replaced = server.replace(second::FindTool).unwrap();
    assert!(replaced.was_replaced);
}
