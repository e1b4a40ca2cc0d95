#[tool(public)]
/// Read the build status.
async fn get_status(project: String) -> String {
    let cache = Rc::new(project);
    std::future::ready(()).await;
    cache.to_string()
}
