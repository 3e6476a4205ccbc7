//! Where the server may connect on a user's word: a git remote or a
//! webhook named by a ci token must not make the server reach into its own
//! network (loopback, link-local, private and unique-local addresses, and
//! the other ranges no public host has), unless the admin allows it
//! (`serve --allow-private-destinations`, for a lab whose git server is
//! internal). Names are resolved here and the addresses checked; the
//! caller connects only to the addresses that passed (git is pinned to
//! one, webhooks resolve through [`Resolver`]), so a name that resolves
//! differently a moment later (DNS rebinding) gains nothing.
//!
//! A refusal is told to the caller in the same words as any other failure
//! to reach the remote (see [`UNREACHABLE`]), so the server cannot be used
//! to learn which internal ports and hosts answer; the log has the detail.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// What a caller is told when a remote cannot be reached, for whatever
/// reason (refused here, unknown name, no answer, refused there).
pub const UNREACHABLE: &str = "it cannot be reached from this server (the server log says why)";

/// The policy: whether private destinations are allowed.
#[derive(Debug, Clone, Copy)]
pub struct Destinations {
    allow_private: bool,
}

impl Destinations {
    /// The policy; `allow_private` lets any address through.
    pub fn new(allow_private: bool) -> Destinations {
        Destinations { allow_private }
    }

    /// Whether the server may connect to `ip`; on refusal, why.
    pub fn check(&self, ip: IpAddr) -> Result<(), String> {
        if self.allow_private || is_public(ip) {
            Ok(())
        } else {
            Err(format!(
                "{ip} is not a public address (serve --allow-private-destinations allows it)"
            ))
        }
    }

    /// The addresses of `host` (a name or an address literal) on `port`
    /// that the server may connect to, in the resolver's order; an error
    /// saying why when there are none.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let found: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => tokio::net::lookup_host((bare, port))
                .await
                .map_err(|e| format!("resolving {host}: {e}"))?
                .collect(),
        };
        let mut refused = Vec::new();
        let allowed: Vec<SocketAddr> = found
            .into_iter()
            .filter(|a| match self.check(a.ip()) {
                Ok(()) => true,
                Err(why) => {
                    refused.push(why);
                    false
                }
            })
            .collect();
        if allowed.is_empty() {
            return Err(if refused.is_empty() {
                format!("{host} has no address")
            } else {
                format!("{host}: {}", refused.join("; "))
            });
        }
        Ok(allowed)
    }
}

/// Whether `ip` may belong to a host on the public internet: not
/// unspecified, loopback, private (RFC 1918), shared (CGNAT), link-local,
/// unique-local, multicast, broadcast, documentation, benchmarking or
/// reserved; IPv6 forms that carry an IPv4 address (mapped, compatible,
/// NAT64, 6to4) are judged by it.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0
        || a == 10
        || a == 127
        || (a == 100 && (64..128).contains(&b))
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 168)
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 0 && c == 2)
        || (a == 198 && (b == 18 || b == 19))
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
        || a >= 224)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    // ::a.b.c.d (deprecated "compatible"), and :: and ::1 themselves.
    if s[..6].iter().all(|&x| x == 0) {
        return is_public_v4(embedded(s[6], s[7])) && !ip.is_loopback();
    }
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach the IPv4 inside.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6].iter().all(|&x| x == 0) {
        return is_public_v4(embedded(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return is_public_v4(embedded(s[1], s[2]));
    }
    !((s[0] & 0xfe00) == 0xfc00          // unique local fc00::/7
        || (s[0] & 0xffc0) == 0xfe80     // link-local fe80::/10
        || (s[0] & 0xffc0) == 0xfec0     // site-local (deprecated) fec0::/10
        || (s[0] & 0xff00) == 0xff00     // multicast
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x0100 && s[1..4].iter().all(|&x| x == 0))) // discard-only
}

/// The webhook client's resolver: a name resolves to the addresses the
/// policy allows, or fails. Address literals in a URL never reach a
/// resolver; the sender checks those itself (and follows no redirect).
#[derive(Debug, Clone)]
pub struct Resolver(pub Destinations);

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.0;
        Box::pin(async move {
            // The port is the connector's; any will do for the lookup.
            let found = policy.resolve(name.as_str(), 0).await.map_err(|why| {
                tracing::warn!(destination = %why, "webhook destination refused");
                Box::<dyn std::error::Error + Send + Sync>::from(why)
            })?;
            Ok(Box::new(found.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

impl Resolver {
    /// The resolver for `policy`, as reqwest takes it.
    pub fn shared(policy: Destinations) -> Arc<Resolver> {
        Arc::new(Resolver(policy))
    }
}

/// An HTTP client for URLs users name (webhooks, archive manifests): each
/// host resolved by `policy`'s resolver when it connects, so a name cannot
/// lead to an internal address either; no redirect followed (each would
/// be a new destination) and no proxy (it would resolve names itself).
/// An address literal meets no resolver: the caller checks it with
/// [`Destinations::resolve`] first.
pub fn client(policy: Destinations, timeout: Duration) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .timeout(timeout)
        .user_agent(concat!("patchperf/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Resolver::shared(policy))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn internal_addresses_are_not_public() {
        for inside in [
            "0.0.0.0",
            "127.0.0.1",
            "127.1.2.3",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "192.0.2.1",
            "224.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "2001:db8::1",
        ] {
            assert!(!is_public(ip(inside)), "{inside}");
        }
        for outside in [
            "8.8.8.8",
            "151.101.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2a00:1450:4001::1",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public(ip(outside)), "{outside}");
        }
    }

    #[tokio::test]
    async fn a_name_or_literal_for_loopback_is_refused_unless_allowed() {
        let closed = Destinations::new(false);
        assert!(closed.resolve("127.0.0.1", 80).await.is_err());
        assert!(closed.resolve("[::1]", 80).await.is_err());
        assert!(closed.resolve("localhost", 80).await.is_err());
        let open = Destinations::new(true);
        let found = open.resolve("127.0.0.1", 8080).await.unwrap();
        assert_eq!(found, [SocketAddr::from(([127, 0, 0, 1], 8080))]);
    }
}
