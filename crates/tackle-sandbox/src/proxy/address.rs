//! Which addresses are local or private: the proxy refuses them unless a pattern names the host,
//! and `webfetch` asks before fetching from them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// True for loopback, private (RFC 1918, fc00::/7), link-local, unspecified, multicast,
/// broadcast, CGNAT (100.64/10), protocol (192.0.0/24), benchmarking (198.18/15) and reserved
/// (0/8, 240/4) addresses, and IPv6 forms that embed one of those IPv4 addresses (mapped,
/// NAT64), and every deprecated IPv4-compatible address (`::a.b.c.d`).
pub fn is_local_or_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4_is_local_or_private(v4),
        IpAddr::V6(v6) => v6_is_local_or_private(v6),
    }
}

fn v4_is_local_or_private(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || a == 0
        || a >= 240
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b == 18 || b == 19))
}

fn v6_is_local_or_private(ip: Ipv6Addr) -> bool {
    // Deprecated and never routed: no public host is reached through one.
    if ip.segments()[..6].iter().all(|&x| x == 0) {
        return true;
    }
    if let Some(v4) = embedded_v4(ip) {
        return v4_is_local_or_private(v4);
    }
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
}

/// The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d)
/// address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    let nat64 = s[0] == 0x64 && s[1] == 0xff9b && s[2..6].iter().all(|&x| x == 0);
    nat64.then_some(tail)
}
