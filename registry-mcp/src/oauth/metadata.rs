//! RFC 9728 protected-resource metadata: where clients learn which authorization server to ask
//! for a token, and for which scopes.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;
use axum::routing::get;
use registry_core::Registry;
use serde_json::{Value, json};

use super::{OAuth, OAuthError};
use crate::upstream::UPSTREAM_SCOPE_PREFIX;

/// The well-known path of the metadata (RFC 9728 §3).
const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The metadata document and where it is served.
pub(crate) struct Metadata {
    /// Its URL for `resource_metadata`: the path-suffixed form of the resource's origin.
    pub(crate) url: String,
    /// The local paths it is served at.
    paths: Vec<String>,
    document: Value,
}

impl Metadata {
    /// The metadata of `oauth` for `registry`, served at the well-known path, suffixed with
    /// the resource's path and with `endpoint` (the local path of the MCP endpoint).
    pub(crate) fn new(
        oauth: &OAuth,
        registry: &Registry,
        endpoint: &str,
    ) -> Result<Metadata, OAuthError> {
        let resource = reqwest::Url::parse(&oauth.resource).map_err(|error| {
            OAuthError::Config(format!(
                "the resource {:?} is not an absolute URI: {error}",
                oauth.resource
            ))
        })?;
        if !matches!(resource.scheme(), "https" | "http") || resource.fragment().is_some() {
            return Err(OAuthError::Config(format!(
                "the resource {:?} must be an https:// (or http://) URI without a fragment",
                oauth.resource
            )));
        }
        let origin = resource.origin().ascii_serialization();
        let path = resource.path().trim_end_matches('/');
        let url = format!("{origin}{WELL_KNOWN}{path}");
        let mut paths = vec![WELL_KNOWN.to_owned()];
        for suffix in [path, endpoint.trim_end_matches('/')] {
            let path = format!("{WELL_KNOWN}{suffix}");
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        let scopes: BTreeSet<String> = match &oauth.scopes_supported {
            Some(scopes) => scopes.iter().cloned().collect(),
            // The registry's own scopes: an upstream's default scope names the upstream, and
            // the metadata is open to anyone.
            None => registry
                .iter()
                .flat_map(|tool| {
                    tool.settings()
                        .scopes
                        .iter()
                        .map(|scope| scope.as_str())
                        .filter(|scope| !scope.starts_with(UPSTREAM_SCOPE_PREFIX))
                        .map(str::to_owned)
                        .collect::<Vec<_>>()
                })
                .collect(),
        };
        let document = json!({
            "resource": oauth.resource,
            "authorization_servers": oauth.authorization_servers,
            "scopes_supported": scopes,
            "bearer_methods_supported": ["header"],
        });
        Ok(Metadata {
            url,
            paths,
            document,
        })
    }
}

/// A router serving the metadata to anyone (it holds no secret), with CORS open so that
/// browser-based clients can read it.
pub(crate) fn metadata_router(metadata: &Arc<Metadata>) -> axum::Router {
    let body = Arc::new(metadata.document.to_string());
    let mut router = axum::Router::new();
    for path in &metadata.paths {
        let body = body.clone();
        router = router.route(
            path,
            get(move || {
                let body = body.clone();
                async move {
                    (
                        [
                            (
                                header::CONTENT_TYPE,
                                HeaderValue::from_static("application/json"),
                            ),
                            (
                                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                                HeaderValue::from_static("*"),
                            ),
                            (
                                header::CACHE_CONTROL,
                                HeaderValue::from_static("public, max-age=300"),
                            ),
                        ],
                        body.as_str().to_owned(),
                    )
                        .into_response()
                }
            }),
        );
    }
    router
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_is_the_path_suffixed_well_known_one() {
        let registry = Registry::builder().allow_empty().build().unwrap();
        let oauth = OAuth::new("https://mcp.example.com:8443/tools/mcp", "https://idp");
        let metadata = Metadata::new(&oauth, &registry, "/mcp").unwrap();
        assert_eq!(
            metadata.url,
            "https://mcp.example.com:8443/.well-known/oauth-protected-resource/tools/mcp"
        );
        assert_eq!(
            metadata.paths,
            [
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-protected-resource/tools/mcp",
                "/.well-known/oauth-protected-resource/mcp"
            ]
        );
        assert_eq!(
            metadata.document["bearer_methods_supported"],
            json!(["header"])
        );
        assert_eq!(
            metadata.document["authorization_servers"],
            json!(["https://idp"])
        );
        for bad in ["mcp.example.com/mcp", "ftp://x/mcp", "https://x/mcp#frag"] {
            let oauth = OAuth::new(bad, "https://idp");
            assert!(Metadata::new(&oauth, &registry, "/mcp").is_err(), "{bad}");
        }
    }
}
