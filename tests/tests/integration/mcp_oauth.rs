//! `registry-mcp` as an OAuth 2.1 resource server, on real loopback HTTP: an in-process
//! server (the example registry) accepting JWT access tokens minted here with this test's
//! own keys, whose JWKS a small local HTTP server publishes (and rotates), and opaque tokens
//! answered by a local introspection endpoint. Driven with rmcp's client and, where the
//! point is the HTTP answer itself, with raw requests.
//!
//! The same server against a real authorization server is `mcp_oauth_idp.rs`.

use crate::mcp_support;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::routing::{get, post};
use base64::Engine;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_support::*;
use registry_core::Subject;
use registry_mcp::upstream::{Federation, UpstreamLock, UpstreamsConfig};
use registry_mcp::{
    CancellationToken, HttpConfig, HttpServer, Introspection, Jwks, McpServer, OAuth, Principal,
    ServerOptions, Tokens,
};
use reqwest::StatusCode;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientServiceExt, ServiceExt};
use serde_json::{Value, json};

const ISSUER: &str = "https://idp.test/";
const RESOURCE: &str = "http://mcp.test/mcp";
const METADATA: &str = "http://mcp.test/.well-known/oauth-protected-resource/mcp";

/// A signing key of this test's identity provider, and its public JWK.
struct Signer {
    kid: &'static str,
    algorithm: Algorithm,
    key: EncodingKey,
    jwk: Jwk,
}

fn signer(kid: &'static str, file: &str, algorithm: Algorithm) -> Signer {
    let pem = std::fs::read(workspace().join("tests/tests/oauth").join(file)).unwrap();
    let key = match algorithm {
        Algorithm::ES256 => EncodingKey::from_ec_pem(&pem).unwrap(),
        _ => EncodingKey::from_rsa_pem(&pem).unwrap(),
    };
    let mut jwk = Jwk::from_encoding_key(&key, algorithm).unwrap();
    jwk.common.key_id = Some(kid.to_owned());
    Signer {
        kid,
        algorithm,
        key,
        jwk,
    }
}

fn key_a() -> Signer {
    signer("key-a", "rsa-a.pem", Algorithm::RS256)
}

fn key_b() -> Signer {
    signer("key-b", "rsa-b.pem", Algorithm::RS256)
}

fn key_ec() -> Signer {
    signer("key-ec", "ec-p256.pem", Algorithm::ES256)
}

fn now() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

/// The claims of a good token of `sub` with `scope`.
fn claims(sub: &str, scope: &str) -> Value {
    json!({
        "iss": ISSUER,
        "aud": RESOURCE,
        "sub": sub,
        "tenant": "acme",
        "scope": scope,
        "azp": "test-client",
        "iat": now(),
        "exp": now() + 600,
    })
}

fn mint(signer: &Signer, claims: &Value) -> String {
    let mut header = Header::new(signer.algorithm);
    header.kid = Some(signer.kid.to_owned());
    jsonwebtoken::encode(&header, claims, &signer.key).unwrap()
}

/// This test's identity provider: a JWKS it can rotate, and an introspection endpoint;
/// counting the requests each gets.
#[derive(Clone, Default)]
struct Idp {
    keys: Arc<Mutex<Vec<Jwk>>>,
    jwks_fetches: Arc<AtomicUsize>,
    introspected: Arc<Mutex<HashMap<String, Value>>>,
    introspections: Arc<AtomicUsize>,
}

struct RunningIdp {
    idp: Idp,
    base: String,
    stop: CancellationToken,
}

impl Drop for RunningIdp {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn start_idp(keys: Vec<Jwk>) -> RunningIdp {
    let idp = Idp::default();
    *idp.keys.lock().unwrap() = keys;
    let router = axum::Router::new()
        .route(
            "/jwks.json",
            get(|State(idp): State<Idp>| async move {
                idp.jwks_fetches.fetch_add(1, Ordering::SeqCst);
                let set = JwkSet {
                    keys: idp.keys.lock().unwrap().clone(),
                };
                serde_json::to_string(&set).unwrap()
            }),
        )
        // Moved within the same origin: a redirect that is followed.
        .route(
            "/moved/jwks.json",
            get(|| async { axum::response::Redirect::temporary("/jwks.json") }),
        )
        .route(
            "/introspect",
            post(
                |State(idp): State<Idp>, headers: axum::http::HeaderMap, body: String| async move {
                    idp.introspections.fetch_add(1, Ordering::SeqCst);
                    // The resource server authenticates as a client (HTTP Basic).
                    let basic = base64::engine::general_purpose::STANDARD.encode("mcp:secret");
                    assert_eq!(headers["authorization"], format!("Basic {basic}"));
                    let token = body
                        .split('&')
                        .find_map(|pair| pair.strip_prefix("token="))
                        .unwrap_or_default()
                        .to_owned();
                    let answer = idp
                        .introspected
                        .lock()
                        .unwrap()
                        .get(&token)
                        .cloned()
                        .unwrap_or(json!({"active": false}));
                    answer.to_string()
                },
            ),
        )
        .with_state(idp.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(stopped.cancelled_owned())
            .await
            .unwrap();
    });
    RunningIdp { idp, base, stop }
}

impl RunningIdp {
    fn jwks_uri(&self) -> String {
        format!("{}/jwks.json", self.base)
    }

    fn oauth(&self) -> OAuth {
        OAuth::new(RESOURCE, ISSUER)
            .with_jwks(Jwks::uri(self.jwks_uri()))
            .with_read_only_scope("tools:read-only")
            .with_refetch_interval(Duration::from_millis(300))
    }
}

/// A registry-mcp server on a free loopback port, serving the example registry.
struct Mcp {
    url: String,
    base: String,
    stop: CancellationToken,
}

impl Drop for Mcp {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn serve(oauth: OAuth, step_up: bool) -> Mcp {
    serve_registry(
        registry_examples::registry().build().unwrap(),
        oauth,
        step_up,
    )
    .await
}

/// [`serve`] of `registry`.
async fn serve_registry(registry: registry_core::Registry, oauth: OAuth, step_up: bool) -> Mcp {
    registry.check_readiness().await;
    let stop = CancellationToken::new();
    let config = HttpConfig::new(Tokens::new())
        .with_addr(SocketAddr::from(([127, 0, 0, 1], 0)))
        .with_options(ServerOptions::default().with_step_up_scopes(step_up))
        .with_shutdown(stop.clone())
        .with_oauth(oauth);
    let server = within("bind", HttpServer::bind(registry, config))
        .await
        .unwrap();
    let url = server.url();
    let base = format!("http://{}", server.local_addr());
    tokio::spawn(server.serve());
    Mcp { url, base, stop }
}

const INITIALIZE: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}"#;

/// A raw POST to the MCP endpoint, in `session` if given.
async fn raw(
    url: &str,
    token: Option<&str>,
    session: Option<&str>,
    body: &str,
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.to_owned());
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    within("a raw request", request.send()).await.unwrap()
}

fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .map(|value| value.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

/// Opens a session with `token` (initialize + initialized) and gives its id.
async fn open_session(url: &str, token: &str) -> String {
    let response = raw(url, Some(token), None, INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::OK);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = response.text().await;
    let initialized = r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#;
    let response = raw(url, Some(token), Some(&session), initialized).await;
    assert!(response.status().is_success(), "{}", response.status());
    session
}

fn tools_call(name: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
    .to_string()
}

async fn list_with(url: &str, token: &str) -> Vec<String> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(token),
    );
    let client = within("initialize", ().serve(transport)).await.unwrap();
    let (tools, _) = list_all(client.peer()).await;
    let names = names(&tools);
    within("close", client.cancel()).await.unwrap();
    names
}

#[tokio::test]
async fn a_tokens_scopes_decide_what_tools_list_shows() {
    let idp = start_idp(vec![key_a().jwk]).await;
    let mcp = serve(idp.oauth(), false).await;
    let narrow = mint(&key_a(), &claims("alice", "build:read"));
    let wide = mint(
        &key_a(),
        &claims("alice", "build:read build:write deploy:write"),
    );
    let read_only = mint(
        &key_a(),
        &claims("alice", "build:read deploy:write tools:read-only"),
    );
    assert_eq!(list_with(&mcp.url, &narrow).await, READER_TOOLS);
    let all = list_with(&mcp.url, &wide).await;
    assert!(all.contains(&"deploy".to_owned()), "{all:?}");
    assert!(all.contains(&"rollback".to_owned()), "{all:?}");
    // The read-only scope hides every tool that is not read-only, whatever else it grants.
    assert_eq!(list_with(&mcp.url, &read_only).await, READER_TOOLS);
}

#[tokio::test]
async fn bad_tokens_get_401_invalid_token_naming_the_reason() {
    let idp = start_idp(vec![key_a().jwk, key_ec().jwk]).await;
    let mcp = serve(idp.oauth(), false).await;

    // No token at all: where to learn how to get one, and no error code.
    let response = raw(&mcp.url, None, None, INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge(&response),
        format!("Bearer resource_metadata=\"{METADATA}\"")
    );

    let good = claims("alice", "build:read");
    let with = |key: &str, value: Value| {
        let mut claims = good.clone();
        claims[key] = value;
        claims
    };
    let without = |key: &str| {
        let mut claims = good.clone();
        claims.as_object_mut().unwrap().remove(key);
        claims
    };
    let cases = [
        (mint(&key_a(), &with("exp", json!(now() - 3600))), "expired"),
        (
            mint(&key_a(), &with("aud", json!("http://other.test/api"))),
            "its `aud` must name http://mcp.test/mcp",
        ),
        (
            mint(&key_a(), &with("iss", json!("https://evil.test/"))),
            "not issued by https://idp.test/",
        ),
        (
            mint(&key_a(), &with("nbf", json!(now() + 3600))),
            "not valid yet",
        ),
        (mint(&key_a(), &without("sub")), "no `sub` claim"),
        (mint(&key_a(), &without("exp")), "no `exp` claim"),
        (mint(&key_a(), &without("tenant")), "no `tenant` claim"),
        (
            // Signed with key B, but claiming to be key A's.
            mint(
                &Signer {
                    kid: "key-a",
                    ..key_b()
                },
                &good,
            ),
            "signature is not valid",
        ),
        ("not-a-jwt-and-no-introspection".to_owned(), "not a JWT"),
        ("eyJhbGciOi.e30.c2ln".to_owned(), "not a well-formed JWT"),
    ];
    for (token, reason) in cases {
        let response = raw(&mcp.url, Some(&token), None, INITIALIZE).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{reason}");
        let challenge = challenge(&response);
        assert!(
            challenge.starts_with(&format!(
                "Bearer error=\"invalid_token\", resource_metadata=\"{METADATA}\", error_description="
            )),
            "{challenge}"
        );
        assert!(challenge.contains(reason), "{reason}: {challenge}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "invalid_token");
    }

    // A good token in the query string is refused: only the header is a bearer method.
    let token = mint(&key_a(), &good);
    let response = raw(
        &format!("{}?access_token={token}", mcp.url),
        None,
        None,
        INITIALIZE,
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(challenge(&response).starts_with("Bearer error=\"invalid_request\""));
    // And in the header it is accepted.
    let response = raw(&mcp.url, Some(&token), None, INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn none_hmac_confusion_and_algorithms_off_the_list_are_refused() {
    let idp = start_idp(vec![key_a().jwk, key_ec().jwk]).await;
    let mcp = serve(idp.oauth().with_algorithms([Algorithm::RS256]), false).await;
    let good = claims("mallory", "build:read deploy:write");
    let b64 =
        |value: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string());
    // `alg: none`, no signature.
    let none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT", "kid": "key-a"})),
        b64(&good)
    );
    // HS256 with the RSA public key as the HMAC secret: the classic confusion.
    let public_pem = std::fs::read(workspace().join("tests/tests/oauth/rsa-a.pub.pem")).unwrap();
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("key-a".into());
    let confused = jsonwebtoken::encode(
        &header,
        &good,
        &EncodingKey::from_secret(&public_pem).unwrap(),
    )
    .unwrap();
    // A good ES256 token, but the server accepts RS256 only.
    let off_the_list = mint(&key_ec(), &good);
    // RS256 claimed, with the EC key's kid.
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("key-ec".into());
    let wrong_key = jsonwebtoken::encode(&header, &good, &key_a().key).unwrap();
    for (token, reason) in [
        (none, "not a well-formed JWT"),
        (confused, "HS256 are not accepted"),
        (off_the_list, "ES256 are not accepted (accepted: RS256)"),
        (wrong_key, "`kid` names no key"),
    ] {
        let response = raw(&mcp.url, Some(&token), None, INITIALIZE).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{reason}");
        let challenge = challenge(&response);
        assert!(challenge.contains(reason), "{reason}: {challenge}");
    }
    // Configuring an HMAC algorithm is refused at startup.
    let registry = registry_examples::registry().build().unwrap();
    let config = HttpConfig::new(Tokens::new())
        .with_addr(SocketAddr::from(([127, 0, 0, 1], 0)))
        .with_oauth(idp.oauth().with_algorithms([Algorithm::HS256]));
    let error = HttpServer::bind(registry, config).await.unwrap_err();
    assert!(
        error.to_string().contains("HS256 is an HMAC algorithm"),
        "{error}"
    );
}

#[tokio::test]
async fn an_unknown_kid_fetches_the_keys_again_at_most_once_per_interval() {
    let idp = start_idp(vec![key_a().jwk]).await;
    let mcp = serve(idp.oauth(), false).await;
    assert_eq!(
        idp.idp.jwks_fetches.load(Ordering::SeqCst),
        1,
        "fetched at startup"
    );
    let rotated = mint(&key_b(), &claims("alice", "build:read"));

    // Key B is not published yet: refused, after one fetch to look for it (once the
    // interval since the startup fetch has passed).
    tokio::time::sleep(Duration::from_millis(350)).await;
    let response = raw(&mcp.url, Some(&rotated), None, INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(challenge(&response).contains("`kid` names no key"));
    assert_eq!(idp.idp.jwks_fetches.load(Ordering::SeqCst), 2);
    // A flood of made-up kids fetches at most once per interval.
    let flood: Vec<String> = (0..20)
        .map(|n| {
            let signer = Signer {
                kid: ["k0", "k1", "k2", "k3", "k4"][n % 5],
                ..key_b()
            };
            mint(&signer, &claims("mallory", "build:read"))
        })
        .collect();
    let started = std::time::Instant::now();
    for token in &flood {
        let response = raw(&mcp.url, Some(token), None, INITIALIZE).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    }
    let intervals = started.elapsed().as_millis() / 300 + 1;
    let fetches = idp.idp.jwks_fetches.load(Ordering::SeqCst);
    assert!(
        u128::try_from(fetches).unwrap() <= 2 + intervals,
        "{fetches} fetches in {intervals} intervals"
    );

    // The issuer rotates: key B is published; after the interval it is found.
    idp.idp.keys.lock().unwrap().push(key_b().jwk);
    tokio::time::sleep(Duration::from_millis(350)).await;
    let response = raw(&mcp.url, Some(&rotated), None, INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::OK);
    // Key A's tokens still work.
    let old = mint(&key_a(), &claims("bob", "build:read"));
    let response = raw(&mcp.url, Some(&old), None, INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::OK);

    // The issuer goes away: known keys still check tokens; an unknown kid cannot be
    // checked, and the request is refused with 503 (fail closed), not accepted.
    idp.stop.cancel();
    tokio::time::sleep(Duration::from_millis(350)).await;
    let response = raw(&mcp.url, Some(&old), None, INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::OK);
    let unknown = mint(
        &Signer {
            kid: "key-c",
            ..key_b()
        },
        &claims("alice", "build:read"),
    );
    let response = raw(&mcp.url, Some(&unknown), None, INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()["retry-after"], "5");
    // The caller has not authenticated: the body names neither the keys' URL nor why the
    // fetch failed (that is in the server's log).
    let body = response.text().await.unwrap();
    let address = idp.base.trim_start_matches("http://");
    for secret in [
        address,
        "http://",
        "jwks",
        "127.0.0.1",
        "connect",
        "error sending",
    ] {
        assert!(!body.contains(secret), "{secret:?} in {body}");
    }
    assert!(body.contains("cannot be checked now"), "{body}");
}

#[tokio::test]
async fn plain_http_key_and_introspection_urls_are_refused_unless_loopback_or_allowed() {
    let registry = registry_examples::registry().build().unwrap();
    let bind = |oauth: OAuth| {
        let config = HttpConfig::new(Tokens::new())
            .with_addr(SocketAddr::from(([127, 0, 0, 1], 0)))
            .with_oauth(oauth.with_fetch_timeout(Duration::from_millis(300)));
        HttpServer::bind(registry.clone(), config)
    };
    // A routable address nothing answers on: over plain http, anyone on the path could
    // answer with keys of their own.
    let remote = "http://192.0.2.1:9/jwks.json";
    let error = bind(OAuth::new(RESOURCE, ISSUER).with_jwks(Jwks::uri(remote)))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(&format!("the JWKS URL {remote} is plain http://")),
        "{error}"
    );
    assert!(
        error.contains("use https://") && error.contains("OAuth::allow_insecure_http"),
        "{error}"
    );
    let introspection = Introspection::new("http://192.0.2.1:9/introspect", "mcp", "secret");
    let error = bind(OAuth::new(RESOURCE, ISSUER).with_introspection(introspection.clone()))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("the introspection endpoint http://192.0.2.1:9/introspect is plain http://"),
        "{error}"
    );
    // Said by the operator: the URL is accepted (and the server then fails to fetch it).
    let error = bind(
        OAuth::new(RESOURCE, ISSUER)
            .with_jwks(Jwks::uri(remote))
            .allow_insecure_http(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(error.contains("cannot fetch the JWKS"), "{error}");
    assert!(
        bind(
            OAuth::new(RESOURCE, ISSUER)
                .with_introspection(introspection)
                .allow_insecure_http()
        )
        .await
        .is_ok()
    );
    // Loopback needs no word from the operator.
    let idp = start_idp(vec![key_a().jwk]).await;
    assert!(bind(idp.oauth()).await.is_ok());
}

#[tokio::test]
async fn random_opaque_tokens_cost_a_bounded_number_of_introspections_per_source() {
    let idp = start_idp(vec![key_a().jwk]).await;
    idp.idp.introspected.lock().unwrap().insert(
        "opaque-good-0001".into(),
        json!({"active": true, "iss": ISSUER, "aud": RESOURCE, "sub": "carol", "tenant": "acme",
               "scope": "build:read", "exp": now() + 600}),
    );
    let introspection = Introspection::new(format!("{}/introspect", idp.base), "mcp", "secret")
        .with_max_refusals_per_source(5, Duration::from_secs(60));
    let mcp = serve(idp.oauth().with_introspection(introspection), false).await;
    // The good token first: its answer is cached.
    let response = raw(&mcp.url, Some("opaque-good-0001"), None, INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(idp.idp.introspections.load(Ordering::SeqCst), 1);
    // 60 random tokens from 127.0.0.1: 5 are asked about, the rest refused unasked.
    let (mut refused, mut throttled) = (0, 0);
    for n in 0..60 {
        let token = format!("random-{n:04}-{}", std::process::id());
        let response = raw(&mcp.url, Some(&token), None, INITIALIZE).await;
        match response.status() {
            StatusCode::UNAUTHORIZED => refused += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                throttled += 1;
                let wait: u64 = response.headers()["retry-after"]
                    .to_str()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert!((1..=60).contains(&wait), "{wait}");
            }
            other => panic!("{other} for a random token"),
        }
    }
    assert_eq!((refused, throttled), (5, 55));
    assert_eq!(idp.idp.introspections.load(Ordering::SeqCst), 1 + 5);
    // The good token, cached, still works from the throttled source.
    let response = raw(&mcp.url, Some("opaque-good-0001"), None, INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::OK);
    // Another source has its own allowance.
    let other = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .build()
        .unwrap();
    let response = within(
        "a request from 127.0.0.2",
        other
            .post(&mcp.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", "Bearer random-from-another-source")
            .body(INITIALIZE)
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(idp.idp.introspections.load(Ordering::SeqCst), 1 + 5 + 1);
}

#[tokio::test]
async fn a_full_introspection_cache_keeps_the_tokens_in_use() {
    let idp = start_idp(vec![key_a().jwk]).await;
    idp.idp.introspected.lock().unwrap().insert(
        "opaque-hot-0001".into(),
        json!({"active": true, "iss": ISSUER, "aud": RESOURCE, "sub": "carol", "tenant": "acme",
               "scope": "build:read", "exp": now() + 600}),
    );
    let introspection = Introspection::new(format!("{}/introspect", idp.base), "mcp", "secret")
        .with_max_entries(4)
        .with_max_refusals_per_source(0, Duration::from_secs(60));
    let mcp = serve(idp.oauth().with_introspection(introspection), false).await;
    // A body that is not JSON: 400 once the token is accepted (no session is opened), 401
    // when it is not.
    for n in 0..40 {
        let response = raw(&mcp.url, Some("opaque-hot-0001"), None, "not json").await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let cold = format!("opaque-cold-{n:04}");
        let response = raw(&mcp.url, Some(&cold), None, "not json").await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    }
    // The hot token was asked about once; each cold one once. A cache cleared whole when
    // full would have asked about the hot token again every few requests.
    assert_eq!(idp.idp.introspections.load(Ordering::SeqCst), 1 + 40);
    // The oldest cold answers were forgotten: asking again reaches the endpoint.
    let response = raw(&mcp.url, Some("opaque-cold-0000"), None, "not json").await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(idp.idp.introspections.load(Ordering::SeqCst), 1 + 40 + 1);
}

#[tokio::test]
async fn a_server_whose_keys_cannot_be_loaded_does_not_start() {
    let registry = registry_examples::registry().build().unwrap();
    // A port nothing listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = listener.local_addr().unwrap();
    drop(listener);
    let config = HttpConfig::new(Tokens::new())
        .with_addr(SocketAddr::from(([127, 0, 0, 1], 0)))
        .with_oauth(
            OAuth::new(RESOURCE, ISSUER).with_jwks(Jwks::uri(format!("http://{closed}/jwks.json"))),
        );
    let error = HttpServer::bind(registry.clone(), config)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("cannot fetch the JWKS"),
        "{error}"
    );
    let config = HttpConfig::new(Tokens::new())
        .with_addr(SocketAddr::from(([127, 0, 0, 1], 0)))
        .with_oauth(OAuth::new(RESOURCE, ISSUER));
    let error = HttpServer::bind(registry, config).await.unwrap_err();
    assert!(error.to_string().contains("with_jwks"), "{error}");
}

#[tokio::test]
async fn without_step_up_a_hidden_tool_is_an_unknown_one() {
    let idp = start_idp(vec![key_a().jwk]).await;
    let mcp = serve(idp.oauth(), false).await;
    let narrow = mint(&key_a(), &claims("alice", "build:read"));
    let session = open_session(&mcp.url, &narrow).await;
    let mut answers = Vec::new();
    for name in ["deploy", "no_such_tool"] {
        let response = raw(
            &mcp.url,
            Some(&narrow),
            Some(&session),
            &tools_call(name, json!({"project": "web", "env": "staging"})),
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK);
        let text = response.text().await.unwrap();
        assert!(text.contains("-32602"), "{text}");
        // The whole answer, its form included (one JSON object, from the edge: a hidden tool
        // is refused as an unknown one is, by the same path).
        answers.push(text.replace(name, "NAME"));
    }
    assert_eq!(answers[0], answers[1]);
}

#[tokio::test]
async fn with_step_up_a_call_needing_more_scopes_gets_403_and_a_new_token_carries_the_session_on() {
    let idp = start_idp(vec![key_a().jwk]).await;
    let mcp = serve(idp.oauth(), true).await;
    let narrow = mint(&key_a(), &claims("alice", "build:read"));
    let session = open_session(&mcp.url, &narrow).await;
    let deploy = tools_call("deploy", json!({"project": "web", "env": "staging"}));

    let response = raw(&mcp.url, Some(&narrow), Some(&session), &deploy).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        challenge(&response),
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"deploy:write build:read\", \
             resource_metadata=\"{METADATA}\", error_description=\"calling `deploy` needs the \
             scopes deploy:write build:read\""
        )
    );
    // Hidden for another reason than scopes, or unknown: no challenge, -32602 as ever.
    let read_only = mint(
        &key_a(),
        &claims("alice", "build:read deploy:write tools:read-only"),
    );
    let ro_session = open_session(&mcp.url, &read_only).await;
    for (token, session, name) in [
        (&read_only, &ro_session, "deploy"),
        (&narrow, &session, "no_such_tool"),
    ] {
        let response = raw(
            &mcp.url,
            Some(token),
            Some(session),
            &tools_call(name, json!({})),
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK, "{name}");
        assert!(response.text().await.unwrap().contains("-32602"), "{name}");
    }

    // rmcp's client reports the challenge as such.
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(mcp.url.as_str()).auth_header(&narrow),
    );
    let client = within("initialize", ().serve(transport)).await.unwrap();
    let error = call(
        client.peer(),
        "deploy",
        json!({"project": "web", "env": "staging"}),
    )
    .await
    .unwrap_err();
    assert!(
        format!("{error:?}").contains("insufficient_scope"),
        "{error:?}"
    );

    // The person consents: a new token for alice with the scopes carries the same session on.
    let wide = mint(&key_a(), &claims("alice", "build:read deploy:write"));
    let response = raw(&mcp.url, Some(&wide), Some(&session), &deploy).await;
    assert_eq!(response.status(), StatusCode::OK);
    let text = response.text().await.unwrap();
    assert!(text.contains("dep-"), "{text}");
    assert!(!text.contains("isError\":true"), "{text}");
    // Another principal's token is refused on alice's session, whatever its scopes.
    let mallory = mint(&key_a(), &claims("mallory", "build:read deploy:write"));
    let response = raw(&mcp.url, Some(&mallory), Some(&session), &deploy).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    // So is the same `sub` vouched for by another issuer: another principal.
    assert!(
        !Principal::new("alice", Subject::new("acme"))
            .with_issuer("https://evil.test/")
            .same_as(&Principal::new("alice", Subject::new("acme")).with_issuer(ISSUER))
    );
}

#[tokio::test]
async fn the_protected_resource_metadata_is_served_to_anyone() {
    let idp = start_idp(vec![key_a().jwk]).await;
    let mcp = serve(idp.oauth(), false).await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let response = within(
            "metadata",
            reqwest::Client::new()
                .get(format!("{}{path}", mcp.base))
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(response.headers()["access-control-allow-origin"], "*");
        let metadata: Value = response.json().await.unwrap();
        assert_eq!(metadata["resource"], RESOURCE);
        assert_eq!(metadata["authorization_servers"], json!([ISSUER]));
        assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
        // Every scope the example tools ask for, sorted.
        assert_eq!(
            metadata["scopes_supported"],
            json!(["build:read", "build:write", "chat:write", "deploy:write"])
        );
    }
}

#[tokio::test]
async fn opaque_tokens_are_introspected_once_and_checked_for_this_server() {
    let idp = start_idp(vec![key_a().jwk]).await;
    let active = |aud: &str| {
        json!({"active": true, "iss": ISSUER, "aud": aud, "sub": "carol", "tenant": "acme",
               "scope": "build:read", "client_id": "carols-agent", "exp": now() + 600})
    };
    {
        let mut introspected = idp.idp.introspected.lock().unwrap();
        introspected.insert("opaque-good-0001".into(), active(RESOURCE));
        introspected.insert("opaque-other-0002".into(), active("http://other.test/api"));
        introspected.insert(
            "opaque-expired-03".into(),
            json!({"active": true, "iss": ISSUER, "aud": RESOURCE, "sub": "carol",
                   "tenant": "acme", "exp": now() - 3600}),
        );
    }
    let introspection = Introspection::new(format!("{}/introspect", idp.base), "mcp", "secret");
    let mcp = serve(idp.oauth().with_introspection(introspection), false).await;

    assert_eq!(list_with(&mcp.url, "opaque-good-0001").await, READER_TOOLS);
    let after_first = idp.idp.introspections.load(Ordering::SeqCst);
    assert_eq!(after_first, 1, "one introspection for a whole session");
    for (token, reason) in [
        ("opaque-other-0002", "its `aud` must name"),
        ("opaque-expired-03", "expired"),
        ("opaque-unknown-04", "not active"),
    ] {
        for _ in 0..2 {
            let response = raw(&mcp.url, Some(token), None, INITIALIZE).await;
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{token}");
            assert!(challenge(&response).contains(reason), "{token}");
        }
    }
    // Refusals are remembered too: each token asked about once.
    assert_eq!(
        idp.idp.introspections.load(Ordering::SeqCst),
        after_first + 3
    );
    // JWTs still go to the keys, not to introspection.
    let jwt = mint(&key_a(), &claims("alice", "build:read"));
    assert_eq!(list_with(&mcp.url, &jwt).await, READER_TOOLS);
    assert_eq!(
        idp.idp.introspections.load(Ordering::SeqCst),
        after_first + 3
    );
}

/// The example server's flags: `--issuer`, `--audience`, `--jwks FILE`, `--step-up`.
#[tokio::test]
async fn the_example_server_accepts_jwts_with_its_oauth_flags() {
    let dir = std::env::temp_dir().join(format!("mcp-oauth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let jwks = dir.join("jwks.json");
    let set = JwkSet {
        keys: vec![key_a().jwk],
    };
    std::fs::write(&jwks, serde_json::to_string(&set).unwrap()).unwrap();
    let server = start_example([
        "--issuer".as_ref(),
        ISSUER.as_ref(),
        "--audience".as_ref(),
        RESOURCE.as_ref(),
        "--jwks".as_ref(),
        jwks.as_os_str(),
        "--tenant-claim".as_ref(),
        "org".as_ref(),
        "--step-up".as_ref(),
        "--log".as_ref(),
        "error".as_ref(),
    ] as [&std::ffi::OsStr; 11])
    .await;
    let url = server.url.clone();
    let mut token_claims = claims("alice", "build:read");
    token_claims["org"] = json!("acme");
    let token = mint(&key_a(), &token_claims);
    assert_eq!(list_with(&url, &token).await, READER_TOOLS);
    // `--tenant-claim org`: a token with only `tenant` has no tenant here.
    let response = raw(
        &url,
        Some(&mint(&key_a(), &claims("alice", "build:read"))),
        None,
        INITIALIZE,
    )
    .await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(challenge(&response).contains("no `org` claim"));
    // `--step-up`.
    let session = open_session(&url, &token).await;
    let response = raw(
        &url,
        Some(&token),
        Some(&session),
        &tools_call("deploy", json!({"project": "web", "env": "staging"})),
    )
    .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Checked tokens are remembered (the signature is verified once a minute), but never past
/// their `exp`.
#[tokio::test]
async fn a_token_that_was_accepted_is_refused_once_it_expires() {
    let idp = start_idp(vec![key_a().jwk]).await;
    let mcp = serve(idp.oauth().with_leeway(Duration::ZERO), false).await;
    let mut short = claims("alice", "build:read");
    short["exp"] = json!(now() + 2);
    let token = mint(&key_a(), &short);
    let response = raw(&mcp.url, Some(&token), None, INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(3100)).await;
    let response = raw(&mcp.url, Some(&token), None, INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(challenge(&response).contains("expired"));
}

/// A 2026-07-28 client over HTTP with `token`, declaring form elicitation.
async fn modern_with(
    url: &str,
    token: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, rmcp::model::ClientConfig> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(token),
    );
    within(
        "discover",
        eliciting().serve_with_lifecycle(
            transport,
            rmcp::ClientLifecycleMode::Discover {
                preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
            },
        ),
    )
    .await
    .expect("a 2026-07-28 client connects")
}

/// Two users of the same client app (`azp`), same tenant and scopes, different `sub`: Bob
/// retries a call with Alice's `requestState` and an answer. Before, the server found her
/// request in the shared lookup (same tenant, agent and tools) and Bob approved, or denied,
/// her call and received its result. Now neither his yes nor his no gets through, and her own
/// answer still decides it.
#[tokio::test]
async fn another_user_of_the_same_client_app_cannot_decide_an_approval() {
    use registry_core::approval::{ApprovalState, MemoryApprovalStore};
    use rmcp::model::{CallToolRequestParams, CallToolResponse, InputResponses};

    let idp = start_idp(vec![key_a().jwk]).await;
    let store = Arc::new(MemoryApprovalStore::new());
    let registry = registry_examples::registry()
        .approval_store(store.clone())
        .build()
        .unwrap();
    let mcp = serve_registry(registry, idp.oauth(), false).await;
    let scope = "build:read deploy:write";
    let alice_token = mint(&key_a(), &claims("alice", scope));
    let bob_token = mint(&key_a(), &claims("bob", scope));
    let alice = modern_with(&mcp.url, &alice_token).await;
    let bob = modern_with(&mcp.url, &bob_token).await;

    let params =
        CallToolRequestParams::new("drop_preview").with_arguments(object(json!({"name": "pr-7"})));
    let asked = within("tools/call", alice.call_tool_once(params.clone()))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(input) = asked else {
        panic!("an input_required result was expected: {asked:?}");
    };
    let state = input.request_state.clone().expect("a request state");
    // Sealed (registry_mcp::RequestStates): not the approval id in the clear.
    assert!(!state.starts_with("apr_") && state.contains('.'), "{state}");

    let answer = |content: Value| -> InputResponses { [("approval".to_owned(), content)].into() };
    let yes = json!({"action": "accept", "content": {"approve": true}});
    let no = json!({"action": "decline"});
    for reply in [yes.clone(), no] {
        let stolen = params
            .clone()
            .with_input_responses(answer(reply))
            .with_request_state(state.clone());
        let error = within("tools/call", bob.call_tool_once(stolen))
            .await
            .unwrap_err();
        assert!(invalid_params(error).contains("requestState"));
    }

    // Alice's own answer decides it: it was neither approved nor denied by Bob.
    let retry = params
        .clone()
        .with_input_responses(answer(yes))
        .with_request_state(state);
    let done = within("tools/call", alice.call_tool_once(retry))
        .await
        .unwrap();
    let CallToolResponse::Complete(done) = done else {
        panic!("a result was expected: {done:?}");
    };
    assert_eq!(done.is_error, Some(false), "{done:?}");
    assert!(
        text(&done).contains("preview pr-7 deleted"),
        "{}",
        text(&done)
    );
    // Issue 45 (L13): the approver is recorded with the token's issuer, so that another
    // issuer's `alice` is another approver.
    let states: Vec<ApprovalState> = store.requests().into_iter().map(|(_, s)| s).collect();
    assert_eq!(
        states,
        [ApprovalState::Approved {
            by: Some(format!("{ISSUER}#alice")),
            edited: false
        }]
    );
    within("close", alice.cancel()).await.unwrap();
    within("close", bob.cancel()).await.unwrap();
}

/// A server on another loopback port, so another origin, that redirects every request to
/// the same path at `target`, counting them.
struct Redirector {
    base: String,
    hits: Arc<AtomicUsize>,
    stop: CancellationToken,
}

impl Drop for Redirector {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn start_redirector(target: &str) -> Redirector {
    let hits = Arc::new(AtomicUsize::new(0));
    let (counted, target) = (hits.clone(), target.to_owned());
    let router = axum::Router::new().fallback(move |uri: axum::http::Uri| {
        counted.fetch_add(1, Ordering::SeqCst);
        let to = format!("{target}{}", uri.path());
        async move { axum::response::Redirect::temporary(&to) }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(stopped.cancelled_owned())
            .await
            .unwrap();
    });
    Redirector { base, hits, stop }
}

/// M7: the keys are fetched from the origin configured only. A JWKS URL that redirects to
/// another origin (here the real keys, on another port) is not followed: the server does not
/// start, and served as a router (keys fetched at the first token) it refuses the token
/// with 503, as for keys that cannot be fetched. A redirect within the origin is followed.
#[tokio::test]
async fn a_jwks_url_that_redirects_to_another_origin_is_not_followed() {
    let idp = start_idp(vec![key_a().jwk]).await;
    let redirector = start_redirector(&idp.base).await;
    let oauth = OAuth::new(RESOURCE, ISSUER)
        .with_jwks(Jwks::uri(format!("{}/jwks.json", redirector.base)))
        .with_refetch_interval(Duration::from_millis(100));
    let token = mint(&key_a(), &claims("alice", "build:read"));
    let registry = registry_examples::registry().build().unwrap();
    let config = HttpConfig::new(Tokens::new())
        .with_addr(SocketAddr::from(([127, 0, 0, 1], 0)))
        .with_oauth(oauth.clone());
    let error = within("bind", HttpServer::bind(registry.clone(), config))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("cannot fetch the JWKS") && error.contains("redirected to another origin"),
        "{error}"
    );
    assert!(error.contains(&idp.base), "{error}");
    assert_eq!(redirector.hits.load(Ordering::SeqCst), 1);
    assert_eq!(idp.idp.jwks_fetches.load(Ordering::SeqCst), 0);

    let stop = CancellationToken::new();
    let config = HttpConfig::new(Tokens::new())
        .with_shutdown(stop.clone())
        .with_oauth(oauth);
    let router = McpServer::new(registry, ServerOptions::default())
        .unwrap()
        .http_router(&config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stopped = stop.clone();
    tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(stopped.cancelled_owned())
            .await
            .unwrap();
    });
    let response = raw(&url, Some(&token), None, INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()["retry-after"], "5");
    let body = response.text().await.unwrap();
    assert!(body.contains("cannot be checked now"), "{body}");
    assert!(!body.contains("127.0.0.1"), "{body}");
    assert_eq!(redirector.hits.load(Ordering::SeqCst), 2);
    assert_eq!(idp.idp.jwks_fetches.load(Ordering::SeqCst), 0);
    stop.cancel();

    // Moved within the issuer's own origin: followed.
    let moved =
        OAuth::new(RESOURCE, ISSUER).with_jwks(Jwks::uri(format!("{}/moved/jwks.json", idp.base)));
    let mcp = serve(moved, false).await;
    let response = raw(&mcp.url, Some(&token), None, INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(idp.idp.jwks_fetches.load(Ordering::SeqCst), 1);
}

/// M7, introspection: an endpoint that redirects to another origin (a 307 keeps the POST,
/// with the token and the server's client credentials) is not followed; the token gets 503,
/// and the other origin is never asked.
#[tokio::test]
async fn an_introspection_endpoint_that_redirects_to_another_origin_is_not_followed() {
    let idp = start_idp(vec![key_a().jwk]).await;
    idp.idp.introspected.lock().unwrap().insert(
        "opaque-good-0001".into(),
        json!({"active": true, "iss": ISSUER, "aud": RESOURCE, "sub": "carol",
               "tenant": "acme", "scope": "build:read", "exp": now() + 600}),
    );
    let redirector = start_redirector(&idp.base).await;
    let introspection =
        Introspection::new(format!("{}/introspect", redirector.base), "mcp", "secret");
    let mcp = serve(
        OAuth::new(RESOURCE, ISSUER).with_introspection(introspection),
        false,
    )
    .await;
    let response = raw(&mcp.url, Some("opaque-good-0001"), None, INITIALIZE).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(redirector.hits.load(Ordering::SeqCst), 1);
    assert_eq!(idp.idp.introspections.load(Ordering::SeqCst), 0);
}

/// T5-5: the `Host` allowlist (against DNS rebinding) is checked first on every route the
/// server serves: both forms of the MCP endpoint's path, every method, the metadata, a path
/// it does not serve. A foreign `Host` gets 403 whether or not a valid token comes with it;
/// under the server's own name each route answers as it always did.
#[tokio::test]
async fn a_foreign_host_is_refused_on_every_route_before_the_token() {
    use reqwest::Method;
    let idp = start_idp(vec![key_a().jwk]).await;
    let mcp = serve(idp.oauth(), false).await;
    let token = mint(&key_a(), &claims("alice", "build:read"));
    let session = open_session(&mcp.url, &token).await;
    let port = mcp.base.rsplit(':').next().unwrap();
    let well_known = "/.well-known/oauth-protected-resource";
    // Each route, and what it answers without a token under the server's own name.
    let routes = [
        (Method::POST, "/mcp".to_owned(), StatusCode::UNAUTHORIZED),
        (Method::GET, "/mcp".to_owned(), StatusCode::UNAUTHORIZED),
        (Method::DELETE, "/mcp".to_owned(), StatusCode::UNAUTHORIZED),
        (Method::POST, "/mcp/".to_owned(), StatusCode::UNAUTHORIZED),
        (Method::GET, well_known.to_owned(), StatusCode::OK),
        (Method::GET, format!("{well_known}/mcp"), StatusCode::OK),
        (
            Method::POST,
            well_known.to_owned(),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            Method::GET,
            "/no-such-path".to_owned(),
            StatusCode::NOT_FOUND,
        ),
    ];
    let send = |method: &Method, path: &str, host: Option<&str>, token: Option<&str>| {
        let mut request = reqwest::Client::new()
            .request(method.clone(), format!("{}{path}", mcp.base))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .body(tools_call("list_builds", json!({})));
        if let Some(host) = host {
            request = request.header("host", host);
        }
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        within("a request", request.send())
    };
    for (method, path, own) in &routes {
        let response = send(method, path, None, None).await.unwrap();
        assert_eq!(response.status(), *own, "{method} {path}");
        for host in [
            format!("evil.example:{port}"),
            "evil.example".to_owned(),
            format!("127.0.0.1.evil.example:{port}"),
        ] {
            for token in [None, Some(token.as_str())] {
                let response = send(method, path, Some(&host), token).await.unwrap();
                let what = format!("{method} {path} Host: {host}, token {}", token.is_some());
                assert_eq!(response.status(), StatusCode::FORBIDDEN, "{what}");
                assert!(
                    response.headers().get("www-authenticate").is_none(),
                    "{what}"
                );
                let body = response.text().await.unwrap();
                assert!(body.contains("HttpConfig::allowed_hosts"), "{what}: {body}");
            }
        }
    }
    // The session is still there, and its call is served under the server's own name.
    let response = send(&Method::POST, "/mcp", None, Some(&token))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

/// N20: the metadata, open to anyone, names no upstream: `scopes_supported` lists the
/// registry's own scopes, not an upstream's `upstream:{name}`.
#[tokio::test]
async fn scopes_supported_names_no_upstream() {
    let idp = start_idp(vec![key_a().jwk]).await;
    // An upstream that is down: its tool is held in place (with its scope) all the same.
    let config = UpstreamsConfig::from_toml(
        "[[upstream]]\nname = \"secret-crm\"\ncommand = [\"false\"]\n\
         [upstream.tools.lookup]\ntimeout_ms = 1000\n",
    )
    .unwrap();
    let federation = within(
        "connect",
        Federation::connect(config, UpstreamLock::in_memory(), &[]),
    )
    .await
    .unwrap();
    let registry = federation
        .register(registry_examples::registry())
        .build()
        .unwrap();
    federation.attach(&registry);
    let lookup = registry
        .iter()
        .find(|tool| tool.name().ends_with("lookup"))
        .expect("the upstream's tool is in the registry");
    let scopes: Vec<&str> = lookup
        .settings()
        .scopes
        .iter()
        .map(|scope| scope.as_str())
        .collect();
    assert_eq!(scopes, ["upstream:secret-crm"]);
    let stop = CancellationToken::new();
    let config = HttpConfig::new(Tokens::new())
        .with_addr(SocketAddr::from(([127, 0, 0, 1], 0)))
        .with_shutdown(stop.clone())
        .with_oauth(idp.oauth());
    let server = within("bind", HttpServer::bind(registry, config))
        .await
        .unwrap();
    let base = format!("http://{}", server.local_addr());
    tokio::spawn(server.serve());
    let response = within(
        "metadata",
        reqwest::Client::new()
            .get(format!("{base}/.well-known/oauth-protected-resource"))
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let text = response.text().await.unwrap();
    assert!(
        !text.contains("secret-crm") && !text.contains("upstream:"),
        "{text}"
    );
    let metadata: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        metadata["scopes_supported"],
        json!(["build:read", "build:write", "chat:write", "deploy:write"])
    );
    stop.cancel();
}

/// L13: a JWT's `typ`, when present, must be an access token's, `at+jwt` (RFC 9068) or
/// `JWT`: another JWT of the same issuer, for the same audience and well signed (a DPoP
/// proof, an ID token typed as such, a security event), is refused.
#[tokio::test]
async fn a_jwt_typed_as_something_else_than_an_access_token_is_refused() {
    let idp = start_idp(vec![key_a().jwk]).await;
    let mcp = serve(idp.oauth(), false).await;
    let typed = |typ: Option<&str>, sub: &str| {
        let signer = key_a();
        let mut header = Header::new(signer.algorithm);
        header.kid = Some(signer.kid.to_owned());
        header.typ = typ.map(str::to_owned);
        jsonwebtoken::encode(&header, &claims(sub, "build:read"), &signer.key).unwrap()
    };
    for (n, typ) in [
        Some("at+jwt"),
        Some("application/at+jwt"),
        Some("JWT"),
        None,
    ]
    .into_iter()
    .enumerate()
    {
        let response = raw(
            &mcp.url,
            Some(&typed(typ, &format!("ok-{n}"))),
            None,
            INITIALIZE,
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK, "{typ:?}");
    }
    for (n, typ) in ["dpop+jwt", "id_token+jwt", "secevent+jwt"]
        .into_iter()
        .enumerate()
    {
        let response = raw(
            &mcp.url,
            Some(&typed(Some(typ), &format!("refused-{n}"))),
            None,
            INITIALIZE,
        )
        .await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{typ}");
        let challenge = challenge(&response);
        assert!(challenge.contains("invalid_token"), "{typ}: {challenge}");
        assert!(challenge.contains("`typ`"), "{typ}: {challenge}");
    }
}

/// Issue 45, L1: the edge owns sessions per principal *in a tenant*. The same user (issuer
/// and `sub`) with a token for another tenant is another owner: every method on the first
/// tenant's session gets 404, as an unknown session (a DELETE would otherwise have closed it:
/// rmcp closes a session without asking the handler), and the session still serves its
/// owner; and the caps on sessions are per tenant, so a full cap in one does not refuse the
/// other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_user_under_another_tenant_cannot_use_or_close_the_session() {
    let idp = start_idp(vec![key_a().jwk]).await;
    let mcp = serve(idp.oauth(), false).await;
    let acme = mint(&key_a(), &claims("alice", "build:read"));
    let mut in_globex = claims("alice", "build:read");
    in_globex["tenant"] = json!("globex");
    let globex = mint(&key_a(), &in_globex);
    let session = open_session(&mcp.url, &acme).await;
    let list = r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}"#;
    let response = raw(&mcp.url, Some(&globex), Some(&session), list).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let response = within(
            "a request on the session",
            reqwest::Client::new()
                .request(method.clone(), &mcp.url)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-11-25")
                .header("authorization", format!("Bearer {globex}"))
                .header("mcp-session-id", &session)
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{method}");
    }
    // The session still serves its owner.
    let response = raw(&mcp.url, Some(&acme), Some(&session), list).await;
    assert_eq!(response.status(), StatusCode::OK);
    let text = within("the tools", response.text()).await.unwrap();
    assert!(text.contains("get_status"), "{text}");
    // Alice fills her cap of sessions in acme (16, the default): in globex she still opens one.
    for _ in 1..16 {
        open_session(&mcp.url, &acme).await;
    }
    let refused = raw(&mcp.url, Some(&acme), None, INITIALIZE).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    open_session(&mcp.url, &globex).await;
}
