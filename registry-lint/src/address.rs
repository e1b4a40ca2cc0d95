//! Internal addresses: private, shared (CGNAT), loopback, link-local and unspecified IPs, in
//! dotted decimal or, as a URL's host, in any form a URL parser reads as IPv4 (`2130706433`,
//! `0x7f000001`, `0177.0.0.1`, `127.1`); internal host names; localhost URLs.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::text::{excerpt, is_word_char, next_char, prev_char, run_end, run_start};
use crate::{Finding, Rule};

pub(crate) fn check(text: &str, out: &mut Vec<Finding>) {
    ipv4(text, out);
    url_hosts(text, out);
    ipv6(text, out);
    hosts(text, out);
    localhost(text, out);
}

/// What kind of internal address `ip` is, if it is one.
fn internal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(ip) => {
            if ip.is_private() {
                Some("a private IP address")
            } else if ip.is_loopback() {
                Some("a loopback address")
            } else if ip.is_link_local() {
                Some("a link-local address")
            } else if ip.is_unspecified() {
                Some("the unspecified address (this host)")
            } else if ip.octets()[0] == 100 && ip.octets()[1] & 0xc0 == 64 {
                Some("a shared address (carrier-grade NAT, 100.64.0.0/10)")
            } else {
                None
            }
        }
        IpAddr::V6(ip) => {
            if let Some(v4) = ip.to_ipv4_mapped() {
                internal(IpAddr::V4(v4))
            } else if ip.is_loopback() {
                Some("a loopback address")
            } else if ip.segments()[0] & 0xfe00 == 0xfc00 {
                Some("a private IP address")
            } else if ip.segments()[0] & 0xffc0 == 0xfe80 {
                Some("a link-local address")
            } else {
                None
            }
        }
    }
}

fn push(text: &str, range: std::ops::Range<usize>, ip: IpAddr, out: &mut Vec<Finding>) {
    if let Some(what) = internal(ip) {
        let shown = excerpt(text, range.clone());
        out.push(Finding::new(Rule::PrivateIp, range, what, shown));
    }
}

/// Four dot-separated numbers, not part of a longer dotted run (a version such as
/// `1.10.0.0.1`) or of a word (`v10.0.0.1`).
fn ipv4(text: &str, out: &mut Vec<Finding>) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if !bytes[at].is_ascii_digit()
            || prev_char(text, at).is_some_and(|c| is_word_char(c) || c == '.')
        {
            at += 1;
            continue;
        }
        let end = run_end(text, at, |c| c.is_ascii_digit() || c == '.');
        let run = text[at..end].trim_end_matches('.');
        let next_is_word = next_char(text, at + run.len()).is_some_and(is_word_char);
        // Four parts, in decimal or (with a leading 0) octal as URL parsers read them:
        // `0177.0.0.1` is 127.0.0.1.
        if run.split('.').count() == 4
            && !next_is_word
            && let Some(ip) = run.parse::<Ipv4Addr>().ok().or_else(|| loose_ipv4(run))
        {
            push(text, at..at + run.len(), IpAddr::V4(ip), out);
        }
        at = end.max(at + 1);
    }
}

/// The IPv4 address `host` is as a URL's host, as the WHATWG URL parser (browsers, and the
/// `url` crate behind most HTTP clients) reads it: one to four dot-separated numbers, each
/// decimal, hexadecimal (`0x`) or octal (a leading `0`), the last filling the bytes left
/// (`127.1`, `2130706433`, `0x7f000001`, `0177.0.0.1`); a trailing dot allowed.
fn loose_ipv4(host: &str) -> Option<Ipv4Addr> {
    let host = host.strip_suffix('.').unwrap_or(host);
    let numbers: Vec<u64> = host.split('.').map(number).collect::<Option<_>>()?;
    let (last, first) = numbers.split_last()?;
    if first.len() > 3 || first.iter().any(|part| *part > 255) {
        return None;
    }
    let bits = 8 * (4 - first.len());
    if *last >= 1 << bits {
        return None;
    }
    let value = (first.iter())
        .enumerate()
        .fold(*last, |value, (index, part)| {
            value | (part << (8 * (3 - index)))
        });
    u32::try_from(value).ok().map(Ipv4Addr::from)
}

/// One part of a [`loose_ipv4`] address.
fn number(part: &str) -> Option<u64> {
    let (digits, radix) = match part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None if part.len() > 1 && part.starts_with('0') => (&part[1..], 8),
        None => (part, 10),
    };
    if digits.is_empty() {
        // `0x` alone is 0; an empty part is no number.
        return (radix == 16).then_some(0);
    }
    if digits.len() > 16 || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Where a URL's authority ends.
fn authority_end(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '/' | '?' | '#' | '"' | '\'' | '`' | '<' | '>' | '(' | ')' | '{' | '}' | '|' | '\\'
        )
}

/// The host of every URL (`scheme://[userinfo@]host[:port]`) written as IPv4 in a form other
/// than four dotted decimals (those [`ipv4`] finds), or as `[::]`.
fn url_hosts(text: &str, out: &mut Vec<Finding>) {
    for (index, _) in text.match_indices("://") {
        let start = index + 3;
        let end = text[start..]
            .find(authority_end)
            .map_or(text.len(), |offset| start + offset);
        let authority = &text[start..end];
        let host_start = authority.rfind('@').map_or(start, |at| start + at + 1);
        let rest = &text[host_start..end];
        if let Some(inner) = rest.strip_prefix('[') {
            if let Some(close) = inner.find(']')
                && let Ok(ip) = inner[..close].parse::<Ipv6Addr>()
                && ip.is_unspecified()
            {
                let range = host_start..host_start + close + 2;
                let shown = excerpt(text, range.clone());
                let what = "the unspecified address (this host)";
                out.push(Finding::new(Rule::PrivateIp, range, what, shown));
            }
            continue;
        }
        let host = rest.split(':').next().unwrap_or_default();
        let dotted = host.strip_suffix('.').unwrap_or(host);
        if dotted.split('.').count() == 4 && dotted.chars().all(|c| c.is_ascii_digit() || c == '.')
        {
            continue; // four dotted decimals: `ipv4` read them
        }
        if let Some(ip) = loose_ipv4(host) {
            push(
                text,
                host_start..host_start + host.len(),
                IpAddr::V4(ip),
                out,
            );
        }
    }
}

fn ipv6_char(c: char) -> bool {
    c.is_ascii_hexdigit() || c == ':' || c == '.'
}

/// A run of hex digits, colons and dots that parses as an IPv6 address (`fd00::1`, `::1`,
/// `[fe80::1]:8080`), not part of a word or a path such as `Vec::new`.
fn ipv6(text: &str, out: &mut Vec<Finding>) {
    let mut at = 0;
    while let Some(offset) = text[at..].find(|c: char| c.is_ascii_hexdigit() || c == ':') {
        let start = at + offset;
        let end = run_end(text, start, ipv6_char);
        at = end;
        if prev_char(text, start).is_some_and(is_word_char)
            || next_char(text, end).is_some_and(is_word_char)
        {
            continue;
        }
        let run = text[start..end].trim_end_matches('.');
        if run.matches(':').count() < 2 {
            continue;
        }
        if let Ok(ip) = run.parse::<Ipv6Addr>() {
            push(text, start..start + run.len(), IpAddr::V6(ip), out);
        }
    }
}

/// The last labels that mark a host name as internal.
const INTERNAL_SUFFIXES: &[&str] = &["internal", "local", "corp", "lan", "localhost"];

fn host_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '.'
}

/// `db.internal`, `printer.local`, `git.corp`, `nas.lan`, `app.localhost`: at least two
/// non-empty labels, the last one of [`INTERNAL_SUFFIXES`]. A lone `.local` or `local` is not a
/// host.
fn hosts(text: &str, out: &mut Vec<Finding>) {
    let mut at = 0;
    while let Some(offset) = text[at..].find(|c: char| c.is_ascii_alphanumeric()) {
        let start = at + offset;
        let end = run_end(text, start, host_char);
        at = end;
        if prev_char(text, start).is_some_and(|c| is_word_char(c) || c == '.')
            || next_char(text, end).is_some_and(is_word_char)
        {
            continue;
        }
        let host = text[start..end].trim_end_matches(['.', '-']);
        let labels: Vec<&str> = host.split('.').collect();
        if labels.len() < 2 || labels.iter().any(|label| label.is_empty()) {
            continue;
        }
        let last = labels[labels.len() - 1].to_ascii_lowercase();
        if INTERNAL_SUFFIXES.contains(&last.as_str()) {
            let range = start..start + host.len();
            let shown = excerpt(text, range.clone());
            out.push(Finding::new(
                Rule::InternalHost,
                range,
                "an internal host name",
                shown,
            ));
        }
    }
}

fn scheme_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-')
}

/// `scheme://localhost...` or `localhost:<port>`; the word alone ("runs on localhost") is not
/// an address.
fn localhost(text: &str, out: &mut Vec<Finding>) {
    const WORD: &str = "localhost";
    let lower = text.to_ascii_lowercase();
    for (start, _) in lower.match_indices(WORD) {
        let after = start + WORD.len();
        if prev_char(text, start).is_some_and(|c| is_word_char(c) || c == '.' || c == '-')
            || next_char(text, after).is_some_and(|c| is_word_char(c) || c == '.' || c == '-')
        {
            continue;
        }
        let url_start = text[..start]
            .strip_suffix("://")
            .map(|before| run_start(text, before.len(), scheme_char))
            .filter(|scheme| *scheme < start - 3);
        let port_end = text[after..]
            .strip_prefix(':')
            .map(|rest| after + 1 + run_end(rest, 0, |c| c.is_ascii_digit()))
            .filter(|end| *end > after + 1);
        if url_start.is_none() && port_end.is_none() {
            continue;
        }
        let start = url_start.unwrap_or(start);
        let end = port_end.unwrap_or(after);
        let shown = excerpt(text, start..end);
        out.push(Finding::new(
            Rule::LocalhostUrl,
            start..end,
            "a localhost address",
            shown,
        ));
    }
}
