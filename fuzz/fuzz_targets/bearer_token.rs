//! The HTTP transport's token check, as an OAuth 2.1 resource server with step-up on: the
//! input is either a JWT claims object (an input starting with `{`), which the harness signs
//! with the issuer's own key so that every check past the signature meets hostile claims, or
//! a raw bearer token (anything else: garbage, forged headers, `alg: none`...). It is sent as
//! `Authorization: Bearer` on a POST of `tools/call` to `McpServer::http_router`, in process,
//! with no session (so none is created and memory stays flat).
//!
//! Beyond "no panic, no hang":
//! - the answer is 401 (refused), 400 (a malformed header or request) or, once past the token
//!   check, the step-up layer's 403 or rmcp's answer to a call without a session; never a
//!   5xx (the keys are local, so whether a token is good is always known);
//! - it never fails open: a token that got past the check (any answer but 401 and the
//!   check's own 400) was signed here, and its claims name the issuer and the audience and
//!   carry a `sub` and a string tenant.

#![no_main]

#[path = "common/tools.rs"]
mod tools;

use std::sync::OnceLock;

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use libfuzzer_sys::fuzz_target;
use registry_mcp::{HttpConfig, Jwks, McpServer, OAuth, ServerOptions, Tokens};
use serde_json::{Map, Value};
use tools::fixture;

const ISSUER: &str = "https://idp.fuzz/";
const RESOURCE: &str = "http://mcp.fuzz/mcp";
/// The issuer's signing key (P-256), generated for this harness only.
const KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgF8eHqBAZ23+YCHyk
RC9Ttkt6qhO5im2zET6m9oeizvChRANCAATDpme3HrcEoZVjCkbFL62FcaX88iCO
72cfsJ8PcZ+bPAptbQKQYCR4q+JTAIYG0r1RB7h8V91gJ/msrO4dIevV
-----END PRIVATE KEY-----
";

struct Harness {
    runtime: tokio::runtime::Runtime,
    router: axum::Router,
    key: EncodingKey,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let key = EncodingKey::from_ec_pem(KEY.as_bytes()).expect("the harness key");
        let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).expect("its JWK");
        jwk.common.key_id = Some("k1".into());
        let set = serde_json::to_string(&JwkSet { keys: vec![jwk] }).expect("a JWKS");
        let oauth = OAuth::new(RESOURCE, ISSUER)
            .with_jwks(Jwks::json(&set).expect("a JWKS"))
            .with_read_only_scope("ro");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let server = McpServer::new(
            fixture().registry.clone(),
            ServerOptions::default()
                .with_step_up_scopes(true)
                .with_readiness_interval(None),
        )
        .expect("the fuzz registry serves over MCP");
        let config = HttpConfig::new(Tokens::new()).with_oauth(oauth);
        let router = runtime.block_on(async { server.http_router(&config) });
        Harness {
            runtime,
            router,
            key,
        }
    })
}

/// Whether `claims` may be accepted at all: what the checks must have seen.
fn admissible(claims: &Map<String, Value>) -> bool {
    let aud = match claims.get("aud") {
        Some(Value::String(aud)) => aud == RESOURCE,
        Some(Value::Array(auds)) => auds.iter().any(|aud| aud == RESOURCE),
        _ => false,
    };
    aud && claims.get("iss") == Some(&Value::String(ISSUER.into()))
        && claims.get("sub").is_some_and(Value::is_string)
        && claims.get("tenant").is_some_and(Value::is_string)
        && claims.get("exp").is_some()
}

fuzz_target!(|input: &[u8]| {
    let harness = harness();
    let (token, claims) = match serde_json::from_slice::<Value>(input) {
        Ok(Value::Object(claims)) if input.first() == Some(&b'{') => {
            let mut header = Header::new(Algorithm::ES256);
            header.kid = Some("k1".into());
            match jsonwebtoken::encode(&header, &claims, &harness.key) {
                Ok(token) => (token, Some(claims)),
                Err(_) => return,
            }
        }
        _ => (String::from_utf8_lossy(input).into_owned(), None),
    };
    let Ok(authorization) = axum::http::HeaderValue::from_str(&format!("Bearer {token}")) else {
        return;
    };
    let request = axum::http::Request::post("/mcp")
        .header("authorization", authorization)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("host", "localhost")
        .body(axum::body::Body::from(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy","arguments":{}}}"#,
        ))
        .expect("a request");
    let response = harness.runtime.block_on(async {
        use tower::ServiceExt;
        harness
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("the router is infallible")
    });
    let status = response.status().as_u16();
    assert!(status < 500, "a 5xx for a token: {status}");
    let refused_by_the_check = status == 401
        || (status == 400
            && response
                .headers()
                .get("www-authenticate")
                .is_some_and(|value| value.as_bytes().starts_with(b"Bearer")));
    if let Some(value) = response.headers().get("www-authenticate") {
        assert!(
            value.as_bytes().iter().all(|b| (0x20..0x7f).contains(b)),
            "a challenge that is not printable ASCII: {value:?}"
        );
    }
    if !refused_by_the_check {
        let claims = claims.unwrap_or_else(|| panic!("an unsigned token got past: {status}"));
        assert!(admissible(&claims), "accepted {claims:?} ({status})");
    }
});
