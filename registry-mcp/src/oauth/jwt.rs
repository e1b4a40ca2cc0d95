//! JWT access tokens: checked, then read.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, AlgorithmFamily, Validation, decode, decode_header};
use serde_json::{Map, Value};

use super::OAuth;
use super::challenge::Refusal;
use super::keys::{KeyError, KeyStore};

/// Whether `token` has the shape of a JWS compact serialization: three base64url parts.
pub(crate) fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Whether a JWT's `typ` header names an access token: `at+jwt` (RFC 9068 §2.1), or `JWT`,
/// which identity providers that predate it still write; a media type, so compared without
/// regard to case and with or without its `application/` prefix (RFC 7515 §4.1.9).
fn is_access_token_type(typ: &str) -> bool {
    let typ = match typ.get(..12) {
        Some(prefix) if prefix.eq_ignore_ascii_case("application/") => &typ[12..],
        _ => typ,
    };
    typ.eq_ignore_ascii_case("at+jwt") || typ.eq_ignore_ascii_case("jwt")
}

/// The claims of `token` once its `typ` (when present), algorithm, signature, `iss`, `aud`,
/// `exp`, `nbf` and `sub` are checked; otherwise why it is refused.
pub(crate) async fn validate(
    token: &str,
    oauth: &OAuth,
    keys: &KeyStore,
) -> Result<Map<String, Value>, Refusal> {
    let header = decode_header(token)
        .map_err(|_| Refusal::InvalidToken("the token is not a well-formed JWT".into()))?;
    if let Some(typ) = &header.typ
        && !is_access_token_type(typ)
    {
        // The value is the sender's: not echoed.
        return Err(Refusal::InvalidToken(
            "the token's `typ` is neither `at+jwt` (RFC 9068) nor `JWT`: it is not an access \
             token (an ID token or another kind of JWT is not accepted here)"
                .into(),
        ));
    }
    let algorithm = header.alg;
    if algorithm.family() == AlgorithmFamily::Hmac || !oauth.algorithms.contains(&algorithm) {
        return Err(Refusal::InvalidToken(format!(
            "tokens signed with {algorithm:?} are not accepted (accepted: {})",
            names(&oauth.algorithms)
        )));
    }
    let key = keys
        .key(header.kid.as_deref(), algorithm)
        .await
        .map_err(|error| match error {
            KeyError::Unknown => Refusal::InvalidToken(match &header.kid {
                Some(_) => "the token's `kid` names no key of the issuer".into(),
                None => "the token has no `kid`, and no single key of the issuer fits it".into(),
            }),
            // Why (the URL, the transport's error) is in the log (`KeyStore::refresh`), never
            // in the answer to a caller who has not authenticated.
            KeyError::Unavailable => Refusal::Unavailable(
                "the token cannot be checked now: the issuer's signing keys are unavailable; \
                 try again later"
                    .into(),
            ),
        })?;
    let mut validation = Validation::new(algorithm);
    validation.algorithms = vec![algorithm];
    validation.leeway = oauth.leeway.as_secs();
    validation.validate_nbf = true;
    validation.set_issuer(&[&oauth.issuer]);
    validation.set_audience(&[&oauth.resource]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    let data =
        decode::<Map<String, Value>>(token, &key.decoding, &validation).map_err(|error| {
            Refusal::InvalidToken(match error.kind() {
                ErrorKind::ExpiredSignature => "the token has expired".to_owned(),
                ErrorKind::ImmatureSignature => "the token is not valid yet (`nbf`)".to_owned(),
                ErrorKind::InvalidAudience => format!(
                    "the token is not for this server: its `aud` must name {}",
                    oauth.resource
                ),
                ErrorKind::InvalidIssuer => {
                    format!("the token was not issued by {} (`iss`)", oauth.issuer)
                }
                ErrorKind::InvalidSignature => "the token's signature is not valid".to_owned(),
                ErrorKind::MissingRequiredClaim(claim) => {
                    format!("the token has no `{claim}` claim")
                }
                ErrorKind::InvalidAlgorithm => {
                    "the token's algorithm does not match its key".to_owned()
                }
                _ => "the token is not valid".to_owned(),
            })
        })?;
    Ok(data.claims)
}

fn names(algorithms: &[Algorithm]) -> String {
    algorithms
        .iter()
        .map(|algorithm| format!("{algorithm:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_three_base64url_parts_look_like_a_jwt() {
        assert!(looks_like_jwt("eyJh.eyJz.c2ln"));
        assert!(!looks_like_jwt("0123456789abcdef-static"));
        assert!(!looks_like_jwt("a.b"));
        assert!(!looks_like_jwt("a.b.c=="));
    }

    #[test]
    fn only_access_token_types_are_accepted() {
        for ok in [
            "at+jwt",
            "AT+JWT",
            "application/at+jwt",
            "JWT",
            "jwt",
            "Application/JWT",
        ] {
            assert!(is_access_token_type(ok), "{ok}");
        }
        for refused in [
            "",
            "dpop+jwt",
            "id_token+jwt",
            "secevent+jwt",
            "JOSE",
            "application/",
            "é",
        ] {
            assert!(!is_access_token_type(refused), "{refused}");
        }
    }
}
