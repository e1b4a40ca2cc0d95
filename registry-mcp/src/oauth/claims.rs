//! A token's claims as the subject it acts for.

use registry_core::{Subject, access::Access};
use serde_json::{Map, Value};

use super::challenge::Refusal;
use super::{OAuth, ReadOnly};
use crate::tokens::Principal;

/// The principal a validated token's claims stand for: `sub` its id, and with the issuer the
/// subject's principal (`oauth:{n}:{issuer}#{sub}`, see [`Principal`]): the person, whom
/// approvals, rate limits and audit events follow; `scope` (or `scp`) its scopes; the tenant
/// from the configured claim; the agent from `azp`, else `client_id` (the client app, shared
/// by all its users); read-only as configured.
pub(crate) fn principal(claims: &Map<String, Value>, oauth: &OAuth) -> Result<Principal, Refusal> {
    let sub = match claims.get("sub") {
        Some(Value::String(sub)) if !sub.is_empty() => sub,
        _ => return Err(Refusal::InvalidToken("the token has no `sub` claim".into())),
    };
    let tenant = match claims.get(&oauth.tenant_claim) {
        Some(Value::String(tenant)) if !tenant.is_empty() => tenant.as_str(),
        Some(_) => {
            return Err(Refusal::InvalidToken(format!(
                "the token's `{}` claim (its tenant) is not a non-empty string",
                oauth.tenant_claim
            )));
        }
        None => match &oauth.default_tenant {
            Some(tenant) => tenant.as_str(),
            None => {
                return Err(Refusal::InvalidToken(format!(
                    "the token has no `{}` claim, which names its tenant",
                    oauth.tenant_claim
                )));
            }
        },
    };
    let scopes = scopes(claims);
    let read_only = match &oauth.read_only {
        None => false,
        Some(ReadOnly::Scope(scope)) => scopes.iter().any(|granted| granted == scope),
        Some(ReadOnly::Claim { name, value }) => claims.get(name) == Some(value),
    };
    let mut subject = Subject::new(tenant).with_scopes(scopes);
    if read_only {
        subject = subject.with_access(Access::ReadOnly);
    }
    let agent = ["azp", "client_id"]
        .iter()
        .find_map(|claim| match claims.get(*claim) {
            Some(Value::String(agent)) if !agent.is_empty() => Some(agent.as_str()),
            _ => None,
        });
    if let Some(agent) = agent {
        subject = subject.with_agent(agent);
    }
    Ok(Principal::new(sub.as_str(), subject).with_issuer(oauth.issuer.as_str()))
}

/// The scopes a token grants: `scope`, a space-separated string (RFC 8693, RFC 9068), or
/// `scp`, an array of strings or a string (Entra ID, Okta).
fn scopes(claims: &Map<String, Value>) -> Vec<String> {
    let mut scopes: Vec<String> = Vec::new();
    for claim in ["scope", "scp"] {
        match claims.get(claim) {
            Some(Value::String(list)) => {
                scopes.extend(list.split_ascii_whitespace().map(str::to_owned));
            }
            Some(Value::Array(items)) => scopes.extend(
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .flat_map(str::split_ascii_whitespace)
                    .map(str::to_owned),
            ),
            _ => {}
        }
    }
    scopes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claims(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[test]
    fn claims_become_the_subject() {
        let oauth = OAuth::new("https://mcp.example.com/mcp", "https://idp.example.com")
            .with_read_only_scope("tools:read-only");
        let alice = principal(
            &claims(
                json!({"sub": "u1", "tenant": "acme", "scope": "build:read  deploy:write",
                           "scp": ["extra"], "azp": "cli", "client_id": "other"}),
            ),
            &oauth,
        )
        .unwrap();
        assert_eq!(alice.id(), "u1");
        assert_eq!(
            alice.subject().principal(),
            Some("oauth:23:https://idp.example.com#u1")
        );
        let subject = alice.subject();
        assert_eq!(subject.tenant(), "acme");
        assert!(subject.has_scope("build:read") && subject.has_scope("deploy:write"));
        assert!(subject.has_scope("extra"));
        assert_eq!(subject.agent(), Some("cli"));
        assert_eq!(subject.access(), Access::ReadWrite);

        let read_only = principal(
            &claims(json!({"sub": "u1", "tenant": "acme", "scope": "tools:read-only", "client_id": "c"})),
            &oauth,
        )
        .unwrap();
        assert_eq!(read_only.subject().access(), Access::ReadOnly);
        assert_eq!(read_only.subject().agent(), Some("c"));
    }

    #[test]
    fn a_token_without_tenant_or_sub_is_refused_unless_a_default_is_set() {
        let oauth = OAuth::new("r", "i").with_tenant_claim("org");
        let refused = principal(&claims(json!({"sub": "u", "tenant": "acme"})), &oauth);
        assert!(matches!(refused, Err(Refusal::InvalidToken(text)) if text.contains("`org`")));
        let refused = principal(&claims(json!({"org": "acme"})), &oauth);
        assert!(matches!(refused, Err(Refusal::InvalidToken(text)) if text.contains("`sub`")));
        let oauth = oauth
            .with_default_tenant("main")
            .with_read_only_claim("ro", true);
        let defaulted = principal(&claims(json!({"sub": "u", "ro": true})), &oauth).unwrap();
        assert_eq!(defaulted.subject().tenant(), "main");
        assert_eq!(defaulted.subject().access(), Access::ReadOnly);
    }
}
