//! Which network addresses `webfetch` may connect to, and the DNS resolver that enforces it.
//!
//! A fetch tool that a prompt or an answer can point anywhere is a server-side request forgery
//! hole: `http://169.254.169.254/` reads cloud credentials, `http://127.0.0.1:5432/` talks to a
//! local database. So every address a host name resolves to is classified *after* resolution, and
//! the HTTP client connects only to the addresses that passed: the resolver below is the client's
//! only resolver, so there is no second lookup that DNS rebinding could answer differently.
//! Literal IP hosts never reach a resolver, so [`Guard::check_url`] classifies them before each
//! request and before each redirect is followed.
//!
//! Opening up is explicit and named: `[webfetch] allow_hosts` (exact host names or IP literals)
//! and `allow_networks` (CIDR blocks) in `switchboard.toml`.

use ipnet::IpNet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

/// Why an address is not public.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocked {
    Loopback,
    Private,
    LinkLocal,
    UniqueLocal,
    Unspecified,
    Multicast,
    Broadcast,
    SharedAddressSpace,
}

impl Blocked {
    pub fn describe(self) -> &'static str {
        match self {
            Blocked::Loopback => "a loopback address",
            Blocked::Private => "a private (RFC 1918) address",
            Blocked::LinkLocal => "a link-local address (this includes the cloud metadata service)",
            Blocked::UniqueLocal => "a unique-local IPv6 address",
            Blocked::Unspecified => "the unspecified address",
            Blocked::Multicast => "a multicast address",
            Blocked::Broadcast => "the broadcast address",
            Blocked::SharedAddressSpace => "a carrier-grade NAT (RFC 6598) address",
        }
    }
}

/// Classifies an address; `None` means it is an ordinary public address.
///
/// IPv4 addresses written inside IPv6 (`::ffff:127.0.0.1`, `::127.0.0.1`) are judged as the IPv4
/// address they carry, since that is where the connection goes.
pub fn classify(ip: IpAddr) -> Option<Blocked> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return classify_v4(v4);
            }
            let seg = v6.segments();
            // IPv4-compatible (deprecated, ::a.b.c.d) but still routed by some stacks.
            if seg[..6].iter().all(|&s| s == 0) && !v6.is_loopback() && !v6.is_unspecified() {
                return classify_v4(Ipv4Addr::new(
                    (seg[6] >> 8) as u8,
                    seg[6] as u8,
                    (seg[7] >> 8) as u8,
                    seg[7] as u8,
                ));
            }
            classify_v6(v6)
        }
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Blocked> {
    let o = ip.octets();
    if ip.is_loopback() {
        Some(Blocked::Loopback)
    } else if ip.is_private() {
        Some(Blocked::Private)
    } else if ip.is_link_local() {
        Some(Blocked::LinkLocal)
    } else if ip.is_unspecified() || o[0] == 0 {
        // 0.0.0.0/8 means "this network": connecting to it reaches the local host on Linux.
        Some(Blocked::Unspecified)
    } else if ip.is_multicast() {
        Some(Blocked::Multicast)
    } else if ip.is_broadcast() {
        Some(Blocked::Broadcast)
    } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
        Some(Blocked::SharedAddressSpace)
    } else {
        None
    }
}

fn classify_v6(ip: Ipv6Addr) -> Option<Blocked> {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        Some(Blocked::Loopback)
    } else if ip.is_unspecified() {
        Some(Blocked::Unspecified)
    } else if ip.is_multicast() {
        Some(Blocked::Multicast)
    } else if first & 0xffc0 == 0xfe80 {
        Some(Blocked::LinkLocal)
    } else if first & 0xfe00 == 0xfc00 {
        Some(Blocked::UniqueLocal)
    } else {
        None
    }
}

/// A refused destination, in words the model (and the user reading the trace) can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{host}` resolves to {ip}, {}; webfetch only reaches public addresses unless switchboard.toml's [webfetch] allow_hosts or allow_networks names it", .why.describe())]
pub struct Refused {
    pub host: String,
    pub ip: IpAddr,
    pub why: Blocked,
}

/// The address policy: public addresses, plus what the configuration opens explicitly.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// Host names (lower case) or IP literals allowed whatever they resolve to.
    allow_hosts: Vec<String>,
    allow_networks: Vec<IpNet>,
}

impl Guard {
    pub fn new(allow_hosts: &[String], allow_networks: Vec<IpNet>) -> Self {
        Guard {
            allow_hosts: allow_hosts
                .iter()
                .map(|h| normalize_host(h).to_ascii_lowercase())
                .collect(),
            allow_networks,
        }
    }

    fn host_allowed(&self, host: &str) -> bool {
        let host = normalize_host(host);
        self.allow_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(host))
    }

    /// Whether `host` may be reached at `ip`.
    pub fn check(&self, host: &str, ip: IpAddr) -> Result<(), Refused> {
        let Some(why) = classify(ip) else {
            return Ok(());
        };
        if self.host_allowed(host) || self.allow_networks.iter().any(|n| n.contains(&ip)) {
            return Ok(());
        }
        Err(Refused {
            host: normalize_host(host).to_string(),
            ip,
            why,
        })
    }

    /// Checks a URL whose host is an IP literal (those skip the resolver). Host names pass here
    /// and are checked by [`GuardedResolver`] when the client connects.
    pub fn check_url(&self, url: &reqwest::Url) -> Result<(), Refused> {
        let host = url.host_str().map(normalize_host).unwrap_or_default();
        match host.parse::<IpAddr>() {
            Ok(ip) => self.check(host, ip),
            Err(_) => Ok(()),
        }
    }
}

/// `[::1]` → `::1`, `Example.COM.` → `example.com`.
fn normalize_host(host: &str) -> &str {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.strip_suffix('.').unwrap_or(host)
}

/// The HTTP client's DNS resolver: resolves with the system resolver, then keeps only the
/// addresses the guard allows. When none is left the connection fails with [`Refused`], which the
/// fetch turns into the tool error.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    pub guard: Arc<Guard>,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = self.guard.clone();
        Box::pin(async move {
            let host = name.as_str().to_ascii_lowercase();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refused = None;
            let allowed: Vec<SocketAddr> = addrs
                .into_iter()
                .filter(|a| match guard.check(&host, a.ip()) {
                    Ok(()) => true,
                    Err(r) => {
                        refused.get_or_insert(r);
                        false
                    }
                })
                .collect();
            if allowed.is_empty() {
                let err: Box<dyn std::error::Error + Send + Sync> = match refused {
                    Some(r) => Box::new(r),
                    None => format!("`{host}` has no address").into(),
                };
                return Err(err);
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn classifies_every_non_public_range() {
        let cases = [
            ("127.0.0.1", Some(Blocked::Loopback)),
            ("127.8.9.10", Some(Blocked::Loopback)),
            ("10.1.2.3", Some(Blocked::Private)),
            ("172.16.0.1", Some(Blocked::Private)),
            ("172.31.255.255", Some(Blocked::Private)),
            ("192.168.1.1", Some(Blocked::Private)),
            ("169.254.169.254", Some(Blocked::LinkLocal)),
            ("0.0.0.0", Some(Blocked::Unspecified)),
            ("0.1.2.3", Some(Blocked::Unspecified)),
            ("224.0.0.1", Some(Blocked::Multicast)),
            ("255.255.255.255", Some(Blocked::Broadcast)),
            ("100.64.0.1", Some(Blocked::SharedAddressSpace)),
            ("::1", Some(Blocked::Loopback)),
            ("::", Some(Blocked::Unspecified)),
            ("fe80::1", Some(Blocked::LinkLocal)),
            ("fd00::1", Some(Blocked::UniqueLocal)),
            ("fc00::1", Some(Blocked::UniqueLocal)),
            ("ff02::1", Some(Blocked::Multicast)),
            ("::ffff:127.0.0.1", Some(Blocked::Loopback)),
            ("::ffff:169.254.169.254", Some(Blocked::LinkLocal)),
            ("::10.0.0.1", Some(Blocked::Private)),
            ("93.184.216.34", None),
            ("172.32.0.1", None),
            ("100.128.0.1", None),
            ("2606:4700::1111", None),
        ];
        for (addr, want) in cases {
            assert_eq!(classify(ip(addr)), want, "{addr}");
        }
    }

    #[test]
    fn allow_lists_open_only_what_they_name() {
        let guard = Guard::new(
            &["LocalHost.".to_string(), "[::1]".to_string()],
            vec!["10.9.0.0/16".parse().unwrap()],
        );
        assert!(guard.check("localhost", ip("127.0.0.1")).is_ok());
        assert!(guard.check("::1", ip("::1")).is_ok());
        assert!(guard.check("db.internal", ip("10.9.3.4")).is_ok());
        let refused = guard.check("db.internal", ip("10.8.3.4")).unwrap_err();
        assert_eq!(refused.why, Blocked::Private);
        assert!(refused.to_string().contains("allow_hosts"));
        assert!(guard.check("evil.test", ip("127.0.0.1")).is_err());
        assert!(Guard::default()
            .check("localhost", ip("127.0.0.1"))
            .is_err());
    }

    #[test]
    fn literal_hosts_are_checked_from_the_url() {
        let guard = Guard::default();
        for url in [
            "http://127.0.0.1:5432/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::1]/",
            "http://[::ffff:7f00:1]/",
        ] {
            let url = reqwest::Url::parse(url).unwrap();
            assert!(guard.check_url(&url).is_err(), "{url}");
        }
        let public = reqwest::Url::parse("https://93.184.216.34/").unwrap();
        assert!(guard.check_url(&public).is_ok());
    }
}
