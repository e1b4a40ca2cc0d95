#[tool(public)]
/// A tool declared inside a function body.
    fn local_tool(x: u8) -> u8 {
        x + 1
    }
