#[tool(public, destructive)]
/// Deploy a release.
fn deploy(release: Release, target: Target) -> Deployment {
    let _ = release.notes;
    Deployment {
        target,
        version: release.version,
    }
}
