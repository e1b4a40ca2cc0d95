//! Where a connection or request comes from, as the limits per source count it: an IPv4
//! address, or an IPv6 /64 (what one host is usually given, and can change at will).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The source of a peer: its IPv4 address, or its IPv6 address with the low 64 bits zeroed
/// (an IPv4-mapped IPv6 address counts as the IPv4 one). Unknown peers (a router served
/// without `ConnectInfo`) share one source, `0.0.0.0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Source(IpAddr);

impl Source {
    /// The source of `peer`.
    pub(crate) fn of(peer: Option<IpAddr>) -> Source {
        match peer {
            None => Source(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            Some(IpAddr::V4(v4)) => Source(IpAddr::V4(v4)),
            Some(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
                Some(v4) => Source(IpAddr::V4(v4)),
                None => {
                    let bits = u128::from(v6) & !u128::from(u64::MAX);
                    Source(IpAddr::V6(Ipv6Addr::from(bits)))
                }
            },
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => write!(f, "{v4}"),
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ipv6_64_is_one_source_and_mapped_ipv4_is_ipv4() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(Source::of(Some(a)), Source::of(Some(b)));
        assert_ne!(Source::of(Some(a)), Source::of(Some(c)));
        assert_eq!(Source::of(Some(a)).to_string(), "2001:db8:1:2::/64");
        let mapped: IpAddr = "::ffff:127.0.0.2".parse().unwrap();
        assert_eq!(Source::of(Some(mapped)).to_string(), "127.0.0.2");
        assert_eq!(Source::of(None).to_string(), "0.0.0.0");
    }
}
