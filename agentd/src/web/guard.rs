//! The address guard (docs/architecture.md#web-access): which addresses are not the public
//! internet. The daemon runs on the user's machine, often inside a private network or a cloud
//! instance; a page the model was pointed at must not make it reach the machine's own
//! services, the network behind it or the cloud's metadata service. Addresses are judged after
//! resolution (a name may resolve to anything) and on every redirect.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` is not an address of the public internet (loopback, private, link-local, the
/// metadata service, …), or `None` when it is one.
pub(crate) fn special(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

/// [`special`] for an IPv4 address.
fn special_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    let why = if a == 0 {
        "an unspecified address (0.0.0.0/8)"
    } else if ip.is_loopback() {
        "a loopback address (127.0.0.0/8)"
    } else if ip == Ipv4Addr::new(169, 254, 169, 254) {
        "the cloud metadata address (169.254.169.254)"
    } else if ip.is_link_local() {
        "a link-local address (169.254.0.0/16)"
    } else if ip.is_private() {
        "a private address (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16)"
    } else if a == 100 && b & 0xC0 == 64 {
        "a shared carrier-grade NAT address (100.64.0.0/10)"
    } else if a == 192 && b == 0 && c == 0 {
        "an IETF protocol address (192.0.0.0/24)"
    } else if (a, b, c) == (192, 0, 2) || (a, b, c) == (198, 51, 100) || (a, b, c) == (203, 0, 113)
    {
        "a documentation address"
    } else if a == 198 && b & 0xFE == 18 {
        "a benchmarking address (198.18.0.0/15)"
    } else if (224..240).contains(&a) {
        "a multicast address (224.0.0.0/4)"
    } else if a >= 240 {
        "a reserved or broadcast address (240.0.0.0/4)"
    } else {
        return None;
    };
    Some(why)
}

/// [`special`] for an IPv6 address; one that carries an IPv4 address (mapped, NAT64, 6to4) is
/// judged by that address too.
fn special_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    let embedded = |high: u16, low: u16| {
        let [h1, h2] = high.to_be_bytes();
        let [l1, l2] = low.to_be_bytes();
        Ipv4Addr::new(h1, h2, l1, l2)
    };
    if let Some(v4) = ip.to_ipv4_mapped() {
        return special_v4(v4).map(|_| "an IPv4-mapped address of a non-public IPv4 address");
    }
    let why = if ip.is_unspecified() {
        "the unspecified address (::)"
    } else if ip.is_loopback() {
        "the loopback address (::1)"
    } else if segments[..6] == [0, 0, 0, 0, 0xffff, 0] {
        "an IPv4-translated address (::ffff:0:0/96)"
    } else if segments[..6] == [0; 6] {
        "an IPv4-compatible address (::/96)"
    } else if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return special_v4(embedded(segments[6], segments[7]))
            .map(|_| "a NAT64 address of a non-public IPv4 address");
    } else if segments[0] == 0x64 && segments[1] == 0xff9b && segments[2] == 1 {
        "a local-use NAT64 address (64:ff9b:1::/48)"
    } else if segments[0] == 0x2002 {
        return special_v4(embedded(segments[1], segments[2]))
            .map(|_| "a 6to4 address of a non-public IPv4 address");
    } else if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        "the cloud metadata address (fd00:ec2::254)"
    } else if segments[0] & 0xfe00 == 0xfc00 {
        "a unique local (private) address (fc00::/7)"
    } else if segments[0] & 0xffc0 == 0xfe80 {
        "a link-local address (fe80::/10)"
    } else if segments[0] & 0xffc0 == 0xfec0 {
        "a site-local address (fec0::/10)"
    } else if segments[0] & 0xff00 == 0xff00 {
        "a multicast address (ff00::/8)"
    } else if segments[..4] == [0x100, 0, 0, 0] {
        "a discard-only address (100::/64)"
    } else if segments[0] == 0x2001 && segments[1] == 0 {
        "a Teredo address (2001::/32)"
    } else if segments[0] == 0x2001 && segments[1] == 0xdb8 {
        "a documentation address (2001:db8::/32)"
    } else {
        return None;
    };
    Some(why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(text: &str) -> Option<&'static str> {
        special(text.parse().unwrap())
    }

    #[test]
    fn every_non_public_ipv4_range_is_refused() {
        for (address, kind) in [
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "unspecified"),
            ("127.0.0.1", "loopback"),
            ("127.255.255.254", "loopback"),
            ("10.0.0.1", "private"),
            ("10.255.255.255", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "metadata"),
            ("169.254.0.1", "link-local"),
            ("100.64.0.1", "carrier-grade"),
            ("100.127.255.255", "carrier-grade"),
            ("192.0.0.8", "IETF"),
            ("192.0.2.1", "documentation"),
            ("198.51.100.7", "documentation"),
            ("203.0.113.9", "documentation"),
            ("198.18.0.1", "benchmarking"),
            ("198.19.255.255", "benchmarking"),
            ("224.0.0.1", "multicast"),
            ("239.255.255.250", "multicast"),
            ("240.0.0.1", "reserved"),
            ("255.255.255.255", "broadcast"),
        ] {
            let why = judged(address).unwrap_or_else(|| panic!("{address} let through"));
            assert!(why.contains(kind), "{address}: {why}");
        }
    }

    #[test]
    fn public_ipv4_addresses_pass_including_the_neighbours_of_the_ranges() {
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "172.15.255.255",
            "172.32.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "169.253.255.255",
            "192.169.0.1",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "11.0.0.1",
        ] {
            assert_eq!(judged(address), None, "{address}");
        }
    }

    #[test]
    fn every_non_public_ipv6_range_is_refused() {
        for (address, kind) in [
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("::7f00:1", "IPv4-compatible"),
            ("::ffff:0:7f00:1", "IPv4-translated"),
            ("::ffff:0:808:808", "IPv4-translated"),
            ("fd00:ec2::254", "metadata"),
            ("fc00::1", "unique local"),
            ("fdff:ffff::1", "unique local"),
            ("fe80::1", "link-local"),
            ("febf::1", "link-local"),
            ("fec0::1", "site-local"),
            ("ff02::1", "multicast"),
            ("100::1", "discard"),
            ("2001::1", "Teredo"),
            ("2001:db8::1", "documentation"),
            ("64:ff9b:1::1", "NAT64"),
        ] {
            let why = judged(address).unwrap_or_else(|| panic!("{address} let through"));
            assert!(why.contains(kind), "{address}: {why}");
        }
    }

    #[test]
    fn an_ipv6_address_carrying_a_non_public_ipv4_address_is_refused() {
        for address in [
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:169.254.169.254",
            "::ffff:192.168.0.1",
            "::ffff:100.64.0.1",
            "::ffff:0.0.0.0",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::1",
            "2002:c0a8:101::",
        ] {
            assert!(judged(address).is_some(), "{address} let through");
        }
        // The same forms around a public address are public.
        for address in [
            "::ffff:93.184.216.34",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(judged(address), None, "{address}");
        }
    }

    #[test]
    fn public_ipv6_addresses_pass() {
        for address in [
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "2001:4860::1",
        ] {
            assert_eq!(judged(address), None, "{address}");
        }
    }
}
