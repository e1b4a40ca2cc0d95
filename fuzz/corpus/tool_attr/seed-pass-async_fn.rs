#[tool(public)]
/// Greet someone, eventually.
async fn greet(name: String) -> String {
    std::future::ready(()).await;
    format!("hello, {name}")
}
