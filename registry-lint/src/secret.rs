//! Secrets: private keys, tokens of the common shapes, passwords in URLs.

use crate::text::{escape, excerpt, prev_char, redacted, run_end, run_start, starts_word};
use crate::{Finding, Rule};

pub(crate) fn check(text: &str, out: &mut Vec<Finding>) {
    private_keys(text, out);
    api_tokens(text, out);
    jwts(text, out);
    bearer_tokens(text, out);
    url_passwords(text, out);
}

/// `-----BEGIN <anything> PRIVATE KEY<anything>-----`, through its `-----END ...-----` when
/// there is one. A public key or a certificate is not a secret.
fn private_keys(text: &str, out: &mut Vec<Finding>) {
    const BEGIN: &str = "-----BEGIN ";
    for (start, _) in text.match_indices(BEGIN) {
        let label_start = start + BEGIN.len();
        let Some(label_len) = text[label_start..].find("-----") else {
            continue;
        };
        let label = &text[label_start..label_start + label_len];
        if label.contains('\n') || !label.contains("PRIVATE KEY") {
            continue;
        }
        let header_end = label_start + label_len + "-----".len();
        let end = text[header_end..]
            .find("-----END ")
            .and_then(|at| {
                let after = header_end + at + "-----END ".len();
                text[after..]
                    .find("-----")
                    .map(|close| after + close + "-----".len())
            })
            .unwrap_or(header_end);
        let shown = if end > header_end {
            format!("{}…", escape(&text[start..header_end]))
        } else {
            escape(&text[start..header_end])
        };
        out.push(Finding::new(
            Rule::PrivateKey,
            start..end,
            "a private key",
            shown,
        ));
    }
}

/// A token shape: a fixed prefix, then a body of some characters.
struct Shape {
    prefix: &'static str,
    what: &'static str,
    /// The characters of the body.
    body: fn(char) -> bool,
    /// The body's length: at least `min`, and exactly `min` when `exact`.
    min: usize,
    exact: bool,
    /// What tells a real token from a placeholder: [`looks_random`], or (for shapes whose
    /// bodies are mostly digits) [`has_digit`].
    real: fn(&str) -> bool,
}

fn alnum(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

fn alnum_dash_underscore(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

fn alnum_underscore(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn alnum_dash(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

fn upper_digit(c: char) -> bool {
    c.is_ascii_uppercase() || c.is_ascii_digit()
}

const SHAPES: &[Shape] = &[
    // OpenAI (`sk-`, `sk-proj-`, `sk-svcacct-`) and Anthropic (`sk-ant-`) keys.
    Shape {
        prefix: "sk-",
        what: "an API token",
        body: alnum_dash_underscore,
        min: 20,
        real: looks_random,
        exact: false,
    },
    Shape {
        prefix: "sk_live_",
        what: "a Stripe live secret key",
        body: alnum,
        min: 16,
        real: looks_random,
        exact: false,
    },
    Shape {
        prefix: "rk_live_",
        what: "a Stripe live restricted key",
        body: alnum,
        min: 16,
        real: looks_random,
        exact: false,
    },
    Shape {
        prefix: "ghp_",
        what: "a GitHub token",
        body: alnum,
        min: 30,
        real: looks_random,
        exact: false,
    },
    Shape {
        prefix: "gho_",
        what: "a GitHub token",
        body: alnum,
        min: 30,
        real: looks_random,
        exact: false,
    },
    Shape {
        prefix: "ghu_",
        what: "a GitHub token",
        body: alnum,
        min: 30,
        real: looks_random,
        exact: false,
    },
    Shape {
        prefix: "ghs_",
        what: "a GitHub token",
        body: alnum,
        min: 30,
        real: looks_random,
        exact: false,
    },
    Shape {
        prefix: "ghr_",
        what: "a GitHub token",
        body: alnum,
        min: 30,
        real: looks_random,
        exact: false,
    },
    Shape {
        prefix: "github_pat_",
        what: "a GitHub token",
        body: alnum_underscore,
        min: 22,
        real: looks_random,
        exact: false,
    },
    Shape {
        prefix: "glpat-",
        what: "a GitLab token",
        body: alnum_dash_underscore,
        min: 20,
        real: looks_random,
        exact: false,
    },
    Shape {
        prefix: "xoxb-",
        what: "a Slack token",
        body: alnum_dash,
        min: 10,
        real: has_digit,
        exact: false,
    },
    Shape {
        prefix: "xoxa-",
        what: "a Slack token",
        body: alnum_dash,
        min: 10,
        real: has_digit,
        exact: false,
    },
    Shape {
        prefix: "xoxp-",
        what: "a Slack token",
        body: alnum_dash,
        min: 10,
        real: has_digit,
        exact: false,
    },
    Shape {
        prefix: "xoxr-",
        what: "a Slack token",
        body: alnum_dash,
        min: 10,
        real: has_digit,
        exact: false,
    },
    Shape {
        prefix: "xoxs-",
        what: "a Slack token",
        body: alnum_dash,
        min: 10,
        real: has_digit,
        exact: false,
    },
    Shape {
        prefix: "AKIA",
        what: "an AWS access key id",
        body: upper_digit,
        min: 16,
        real: looks_random,
        exact: true,
    },
    Shape {
        prefix: "ASIA",
        what: "an AWS access key id",
        body: upper_digit,
        min: 16,
        real: looks_random,
        exact: true,
    },
    Shape {
        prefix: "AIza",
        what: "a Google API key",
        body: alnum_dash_underscore,
        min: 35,
        real: looks_random,
        exact: false,
    },
];

/// Whether `body` looks generated rather than written: characters of at least two of
/// lowercase, uppercase and digits, and no character making up half of it. Placeholders
/// (`xxxxxxxx...`, `YOUR_TOKEN_HERE`, `your-token-goes-here`) are not.
fn looks_random(body: &str) -> bool {
    let classes = [
        body.chars().any(|c| c.is_ascii_lowercase()),
        body.chars().any(|c| c.is_ascii_uppercase()),
        body.chars().any(|c| c.is_ascii_digit()),
    ];
    if classes.iter().filter(|present| **present).count() < 2 {
        return false;
    }
    let len = body.chars().count();
    let most = body
        .chars()
        .map(|c| body.chars().filter(|other| *other == c).count())
        .max()
        .unwrap_or(0);
    most * 2 < len
}

fn has_digit(body: &str) -> bool {
    body.chars().any(|c| c.is_ascii_digit())
}

fn api_tokens(text: &str, out: &mut Vec<Finding>) {
    for shape in SHAPES {
        for (start, _) in text.match_indices(shape.prefix) {
            if !starts_word(text, start) || prev_char(text, start) == Some('-') {
                continue;
            }
            let body_start = start + shape.prefix.len();
            let end = run_end(text, body_start, shape.body);
            let body = &text[body_start..end];
            let len = body.len();
            let long_enough = if shape.exact {
                len == shape.min
            } else {
                len >= shape.min
            };
            if !long_enough || !(shape.real)(body) {
                continue;
            }
            let shown = if shape.prefix == "sk-" {
                // `sk-proj-…`, `sk-ant-…`: the kind of key, not its first characters.
                let kind = body
                    .split_once('-')
                    .filter(|(kind, _)| {
                        kind.len() <= 8 && kind.chars().all(|c| c.is_ascii_lowercase())
                    })
                    .map_or(0, |(kind, _)| kind.len() + 1);
                redacted(text, start..end, shape.prefix.len() + kind)
            } else {
                redacted(text, start..end, shape.prefix.len())
            };
            out.push(Finding::new(Rule::ApiToken, start..end, shape.what, shown));
        }
    }
}

fn base64url(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// `eyJ<header>.eyJ<payload>.<signature>`: a JSON Web Token (its first two parts are
/// base64url JSON objects, which always begin `eyJ`).
fn jwts(text: &str, out: &mut Vec<Finding>) {
    const MIN_PART: usize = 10;
    for (start, _) in text.match_indices("eyJ") {
        if !starts_word(text, start) || prev_char(text, start) == Some('-') {
            continue;
        }
        let header_end = run_end(text, start, base64url);
        if header_end - start < MIN_PART || !text[header_end..].starts_with('.') {
            continue;
        }
        let payload_start = header_end + 1;
        if !text[payload_start..].starts_with("eyJ") {
            continue;
        }
        let payload_end = run_end(text, payload_start, base64url);
        if payload_end - payload_start < MIN_PART || !text[payload_end..].starts_with('.') {
            continue;
        }
        let end = run_end(text, payload_end + 1, base64url);
        out.push(Finding::new(
            Rule::Jwt,
            start..end,
            "a JSON Web Token",
            redacted(text, start..end, 3),
        ));
    }
}

fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~' | '+' | '/' | '=')
}

/// `Bearer <token>`: a token of at least 16 characters that looks generated and has a digit.
fn bearer_tokens(text: &str, out: &mut Vec<Finding>) {
    const MIN: usize = 16;
    let lower = text.to_ascii_lowercase();
    for (start, _) in lower.match_indices("bearer") {
        if !starts_word(text, start) {
            continue;
        }
        let after = start + "bearer".len();
        let token_start = run_end(text, after, |c| c == ' ' || c == '\t');
        if token_start == after {
            continue;
        }
        let end = run_end(text, token_start, token_char);
        let token = text[token_start..end].trim_end_matches('.');
        let end = token_start + token.len();
        if token.len() < MIN || !token.chars().any(|c| c.is_ascii_digit()) || !looks_random(token) {
            continue;
        }
        out.push(Finding::new(
            Rule::BearerToken,
            start..end,
            "a bearer token",
            redacted(text, start..end, token_start - start + 4),
        ));
    }
}

fn scheme_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-')
}

/// Where the authority of a URL ends: at the path, query, fragment, or anything that cannot
/// be in it.
fn authority_char(c: char) -> bool {
    !(c.is_whitespace()
        || matches!(
            c,
            '/' | '?'
                | '#'
                | '"'
                | '\''
                | '`'
                | '<'
                | '>'
                | '('
                | ')'
                | '['
                | ']'
                | '{'
                | '}'
                | '\\'
        ))
}

/// A password that stands for one rather than being one: `<password>`, `${PASSWORD}`,
/// `$PASS`, `%s`, `****`, `xxx`, `...`, or the words password, pass, passwd, pwd, secret.
fn is_placeholder(password: &str) -> bool {
    password.starts_with(['<', '{', '$', '%', '['])
        || password
            .chars()
            .all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '…'))
        || ["password", "pass", "passwd", "pwd", "secret"]
            .iter()
            .any(|word| password.eq_ignore_ascii_case(word))
}

/// `scheme://user:password@host`, unless the password is a placeholder.
fn url_passwords(text: &str, out: &mut Vec<Finding>) {
    for (at, _) in text.match_indices("://") {
        let start = run_start(text, at, scheme_char);
        if start == at || !text[start..].starts_with(|c: char| c.is_ascii_alphabetic()) {
            continue;
        }
        let authority_start = at + "://".len();
        let end = run_end(text, authority_start, authority_char);
        let authority = &text[authority_start..end];
        let Some((userinfo, host)) = authority.rsplit_once('@') else {
            continue;
        };
        let Some((user, password)) = userinfo.split_once(':') else {
            continue;
        };
        if password.is_empty() || host.is_empty() || is_placeholder(password) {
            continue;
        }
        let shown = format!(
            "{}{user}:…@{host}",
            &text[start..authority_start],
            user = escape(user),
            host = escape(host)
        );
        out.push(Finding::new(
            Rule::UrlPassword,
            start..end,
            "a password in a URL",
            excerpt_limit(shown),
        ));
    }
}

/// `shown`, cut to a reasonable length.
fn excerpt_limit(shown: String) -> String {
    if shown.chars().count() <= 80 {
        shown
    } else {
        let end = shown.len();
        excerpt(&shown, 0..end)
    }
}
