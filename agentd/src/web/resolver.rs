//! Name resolution for web calls with the address guard inside it
//! (docs/architecture.md#web-access): the HTTP client connects only to addresses this resolver
//! handed back, and it hands back only addresses it checked, so nothing can change between the
//! check and the connection (no DNS rebinding). Hosts written as an address never reach a
//! resolver: [`check_literal`] judges those before the request is sent.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::guard;

/// The most addresses of one name that are kept.
const MAX_ADDRESSES: usize = 32;

/// Which hosts may use addresses that are not public: the ones a rule names.
pub(crate) type NamedHosts = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// A host whose address is not public, refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refused: {host} {how}{why}; {}", advice(self.tool, &self.host))]
pub(crate) struct AddressRefused {
    /// The host as the URL names it.
    pub(crate) host: String,
    /// "resolves to ADDRESS, " for a name, "is " for an address.
    how: String,
    /// The first refused address.
    pub(crate) address: IpAddr,
    /// What kind of address it is.
    why: &'static str,
    /// The tool that was refused (`fetch`, `web_search`).
    tool: &'static str,
}

/// What the user can do about a refused address.
fn advice(tool: &str, host: &str) -> String {
    if tool == "web_search" {
        "a search server may have such an address only when it is the base_url set in [web_search] of config.toml".to_string()
    } else {
        format!(
            "the daemon reaches such addresses only for a host an allow rule names (add `{tool}:{host}` to [permissions] allow in config.toml)"
        )
    }
}

/// Resolves names and keeps only the addresses the guard lets through for that name.
pub(crate) struct GuardedResolver {
    /// The hosts whose private addresses are allowed; `None` allows none.
    pub(crate) named: Option<NamedHosts>,
    /// The tool the refusal names.
    pub(crate) tool: &'static str,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        let private_ok = self.named.as_ref().is_some_and(|named| named(&host));
        let tool = self.tool;
        Box::pin(async move {
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let kept = checked(&host, found.take(MAX_ADDRESSES), private_ok, tool)?;
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

/// The addresses of `host` that may be reached: all of them when `private_ok`, else the public
/// ones. Refused when none is left (or none was found).
pub(crate) fn checked(
    host: &str,
    found: impl Iterator<Item = SocketAddr>,
    private_ok: bool,
    tool: &'static str,
) -> Result<Vec<SocketAddr>, AddressRefused> {
    let mut kept = Vec::new();
    let mut refused = None;
    for address in found {
        match guard::special(address.ip()) {
            Some(why) if !private_ok => {
                refused.get_or_insert((address.ip(), why));
            }
            _ => kept.push(address),
        }
    }
    match refused {
        Some((address, why)) if kept.is_empty() => Err(AddressRefused {
            host: host.to_string(),
            how: format!("resolves to {address}, "),
            address,
            why,
            tool,
        }),
        _ => Ok(kept),
    }
}

/// Judges a host written as an address (`http://127.0.0.1/`, `http://[::1]/`), which no
/// resolver sees; a name passes here and is judged when it is resolved.
pub(crate) fn check_literal(
    host: &url::Host<&str>,
    private_ok: bool,
    tool: &'static str,
) -> Result<(), AddressRefused> {
    let address = match host {
        url::Host::Ipv4(v4) => IpAddr::V4(*v4),
        url::Host::Ipv6(v6) => IpAddr::V6(*v6),
        url::Host::Domain(_) => return Ok(()),
    };
    match guard::special(address) {
        Some(why) if !private_ok => Err(AddressRefused {
            host: address.to_string(),
            how: "is ".to_string(),
            address,
            why,
            tool,
        }),
        _ => Ok(()),
    }
}

/// Judges a host before any lookup, as the permission check does: an address as
/// [`check_literal`] does, and a name of this machine (`localhost`, `*.localhost`, which always
/// resolve to loopback) likewise; any other name passes (it is judged when resolved).
pub(crate) fn check_unresolved(
    host: &url::Host<&str>,
    private_ok: bool,
    tool: &'static str,
) -> Result<(), AddressRefused> {
    match host {
        url::Host::Domain(name)
            if !private_ok && (*name == "localhost" || name.ends_with(".localhost")) =>
        {
            Err(AddressRefused {
                host: name.to_string(),
                how: "names this machine: ".to_string(),
                address: IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
                why: "a loopback address (127.0.0.0/8)",
                tool,
            })
        }
        _ => check_literal(host, private_ok, tool),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> SocketAddr {
        SocketAddr::new(text.parse().unwrap(), 0)
    }

    #[test]
    fn only_public_addresses_are_handed_back() {
        let found = [at("127.0.0.1"), at("93.184.216.34"), at("::1")];
        let kept = checked("mixed.example", found.into_iter(), false, "fetch").unwrap();
        assert_eq!(kept, [at("93.184.216.34")]);
    }

    #[test]
    fn a_name_with_only_private_addresses_is_refused_with_the_rule_that_allows_it() {
        let found = [at("127.0.0.1"), at("::1")];
        let refused = checked("localhost", found.into_iter(), false, "fetch").unwrap_err();
        assert_eq!(refused.address, at("127.0.0.1").ip());
        let text = refused.to_string();
        assert!(text.contains("localhost resolves to 127.0.0.1"), "{text}");
        assert!(text.contains("`fetch:localhost`"), "{text}");
        let kept = checked("localhost", found.into_iter(), true, "fetch").unwrap();
        assert_eq!(kept.len(), 2);
    }

    #[test]
    fn a_name_without_addresses_gives_nothing_to_connect_to() {
        let kept = checked("empty.example", std::iter::empty(), false, "fetch").unwrap();
        assert!(kept.is_empty());
    }

    #[test]
    fn address_hosts_are_judged_directly() {
        let loopback = url::Host::Ipv4("127.0.0.1".parse().unwrap());
        assert!(check_literal(&loopback, false, "fetch").is_err());
        assert!(check_literal(&loopback, true, "fetch").is_ok());
        let mapped = url::Host::Ipv6("::ffff:169.254.169.254".parse().unwrap());
        assert!(check_literal(&mapped, false, "fetch").is_err());
        let name = url::Host::Domain("localhost");
        assert!(check_literal(&name, false, "fetch").is_ok());
    }

    #[test]
    fn names_of_this_machine_are_refused_before_any_lookup() {
        for name in ["localhost", "app.localhost"] {
            let host = url::Host::Domain(name);
            let refused = check_unresolved(&host, false, "fetch").unwrap_err();
            assert!(
                refused
                    .to_string()
                    .starts_with(&format!("refused: {name} names this machine"))
            );
            assert!(check_unresolved(&host, true, "fetch").is_ok());
        }
        assert!(check_unresolved(&url::Host::Domain("docs.rs"), false, "fetch").is_ok());
        let literal = url::Host::Ipv4("10.0.0.1".parse().unwrap());
        assert!(check_unresolved(&literal, false, "fetch").is_err());
    }
}
