//! Which addresses are on the public internet. IPv4 and IPv6 special-purpose ranges are not,
//! and an IPv6 address that carries an IPv4 address (mapped, compatible, translated, NAT64,
//! 6to4, Teredo, ISATAP) is judged by the IPv4 address it carries.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An address that is not on the public internet, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Special {
    /// The address judged.
    pub ip: IpAddr,
    /// The IPv4 address inside `ip` that decided, and the form that carries it.
    pub carried: Option<(Ipv4Addr, Carrier)>,
    /// The range of the address that decided.
    pub range: Range,
}

/// A range of addresses that is not on the public internet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Range {
    /// `0.0.0.0`, `::`.
    Unspecified,
    /// `0.0.0.0/8`.
    ThisNetwork,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// `10.0.0.0/8`, `172.16.0.0/12`, `192.168.0.0/16`.
    Private,
    /// `100.64.0.0/10`.
    Shared,
    /// `169.254.0.0/16`, `fe80::/10`.
    LinkLocal,
    /// `192.0.0.0/24`, `2001::/23` but for its global parts.
    ProtocolAssignments,
    /// `192.0.2.0/24`, `198.51.100.0/24`, `203.0.113.0/24`, `2001:db8::/32`, `3fff::/20`.
    Documentation,
    /// `192.88.99.0/24`.
    Relay,
    /// `198.18.0.0/15`, `2001:2::/48`.
    Benchmarking,
    /// `224.0.0.0/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// `240.0.0.0/4`.
    Reserved,
    /// `fc00::/7`.
    UniqueLocal,
    /// `fec0::/10`.
    SiteLocal,
    /// `100::/64`.
    Discard,
    /// `64:ff9b:1::/48`.
    LocalTranslation,
    /// IPv6 outside `2000::/3`, the global unicast space.
    NotGlobalUnicast,
}

impl Range {
    fn describe(self) -> &'static str {
        match self {
            Self::Unspecified => "the unspecified address",
            Self::ThisNetwork => "an address of \"this network\" (0.0.0.0/8)",
            Self::Loopback => "a loopback address",
            Self::Private => "a private address",
            Self::Shared => "a shared address (carrier-grade NAT, 100.64.0.0/10)",
            Self::LinkLocal => "a link-local address (where cloud metadata services answer)",
            Self::ProtocolAssignments => "an address reserved for IETF protocol assignments",
            Self::Documentation => "a documentation address",
            Self::Relay => "the 6to4 relay anycast range (192.88.99.0/24)",
            Self::Benchmarking => "a benchmarking address",
            Self::Multicast => "a multicast address",
            Self::Broadcast => "the broadcast address",
            Self::Reserved => "a reserved address (240.0.0.0/4)",
            Self::UniqueLocal => "a unique local address (fc00::/7, IPv6's private range)",
            Self::SiteLocal => "a site-local address (fec0::/10)",
            Self::Discard => "a discard-only address (100::/64)",
            Self::LocalTranslation => "a local-use IPv4/IPv6 translation address (64:ff9b:1::/48)",
            Self::NotGlobalUnicast => "outside IPv6's global unicast space (2000::/3)",
        }
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// A form of IPv6 address that carries an IPv4 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Carrier {
    /// `::ffff:a.b.c.d`.
    Mapped,
    /// `::a.b.c.d`.
    Compatible,
    /// `::ffff:0:a.b.c.d`.
    Translated,
    /// `64:ff9b::a.b.c.d`.
    Nat64,
    /// `2002:aabb:ccdd::/48`.
    SixToFour,
    /// `2001:0:aabb:ccdd::/64`: the Teredo server.
    TeredoServer,
    /// `2001:0:…:…:…:…:xxxx:xxxx`: the Teredo client, bits inverted.
    TeredoClient,
    /// An interface identifier `0:5efe:a.b.c.d` (or `200:5efe:…`).
    Isatap,
}

impl fmt::Display for Carrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Mapped => "IPv4-mapped",
            Self::Compatible => "IPv4-compatible",
            Self::Translated => "IPv4-translated",
            Self::Nat64 => "NAT64",
            Self::SixToFour => "6to4",
            Self::TeredoServer => "Teredo server",
            Self::TeredoClient => "Teredo client",
            Self::Isatap => "ISATAP",
        })
    }
}

impl Special {
    /// What the address is, without the address itself: `a loopback address`, `carries
    /// 127.0.0.1 (IPv4-compatible), a loopback address`.
    pub(crate) fn what(&self) -> String {
        match self.carried {
            None => self.range.to_string(),
            Some((v4, carrier)) => format!("carries {v4} ({carrier}), {}", self.range),
        }
    }
}

impl fmt::Display for Special {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.carried {
            None => write!(f, "{}, {}", self.ip, self.range),
            Some(_) => write!(f, "{}, which {}", self.ip, self.what()),
        }
    }
}

/// Whether `ip` is on the public internet; if not, why.
pub(crate) fn judge(ip: IpAddr) -> Result<(), Special> {
    match ip {
        IpAddr::V4(v4) => match v4_range(v4) {
            None => Ok(()),
            Some(range) => Err(Special {
                ip,
                carried: None,
                range,
            }),
        },
        IpAddr::V6(v6) => judge_v6(v6),
    }
}

fn judge_v6(v6: Ipv6Addr) -> Result<(), Special> {
    let ip = IpAddr::V6(v6);
    let refuse = |range| {
        Err(Special {
            ip,
            carried: None,
            range,
        })
    };
    if v6.is_unspecified() {
        return refuse(Range::Unspecified);
    }
    if v6.is_loopback() {
        return refuse(Range::Loopback);
    }
    // Where the prefix itself says the address stands for IPv4 ones, those decide.
    if let Some(carried) = translation(v6) {
        for (v4, carrier) in carried.into_iter().flatten() {
            if let Some(range) = v4_range(v4) {
                return Err(Special {
                    ip,
                    carried: Some((v4, carrier)),
                    range,
                });
            }
        }
        return Ok(());
    }
    if let Some(range) = v6_range(v6) {
        return refuse(range);
    }
    // A global prefix with an ISATAP interface identifier: the IPv4 address it carries is
    // where the tunnel delivers.
    if let Some(v4) = isatap(v6)
        && let Some(range) = v4_range(v4)
    {
        return Err(Special {
            ip,
            carried: Some((v4, Carrier::Isatap)),
            range,
        });
    }
    Ok(())
}

fn v4_of(high: u16, low: u16) -> Ipv4Addr {
    Ipv4Addr::from((u32::from(high) << 16) | u32::from(low))
}

/// The IPv4 addresses an address of a translation prefix stands for: mapped, translated,
/// compatible, NAT64's well-known prefix, 6to4, Teredo (server and client).
fn translation(ip: Ipv6Addr) -> Option<[Option<(Ipv4Addr, Carrier)>; 2]> {
    let s = ip.segments();
    let one = |high, low, carrier| Some([Some((v4_of(high, low), carrier)), None]);
    match s {
        [0, 0, 0, 0, 0, 0xffff, high, low] => one(high, low, Carrier::Mapped),
        [0, 0, 0, 0, 0xffff, 0, high, low] => one(high, low, Carrier::Translated),
        [0, 0, 0, 0, 0, 0, high, low] => one(high, low, Carrier::Compatible),
        [0x64, 0xff9b, 0, 0, 0, 0, high, low] => one(high, low, Carrier::Nat64),
        [0x2002, high, low, ..] => one(high, low, Carrier::SixToFour),
        [
            0x2001,
            0,
            server_high,
            server_low,
            _,
            _,
            client_high,
            client_low,
        ] => Some([
            Some((v4_of(server_high, server_low), Carrier::TeredoServer)),
            Some((v4_of(!client_high, !client_low), Carrier::TeredoClient)),
        ]),
        _ => None,
    }
}

/// The IPv4 address of an ISATAP interface identifier (RFC 5214), if the address has one.
fn isatap(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    (s[4] & 0xfdff == 0 && s[5] == 0x5efe).then(|| v4_of(s[6], s[7]))
}

fn v4_range(ip: Ipv4Addr) -> Option<Range> {
    let [a, b, c, _] = ip.octets();
    Some(if ip.is_unspecified() {
        Range::Unspecified
    } else if a == 0 {
        Range::ThisNetwork
    } else if ip.is_loopback() {
        Range::Loopback
    } else if ip.is_private() {
        Range::Private
    } else if a == 100 && b & 0xc0 == 64 {
        Range::Shared
    } else if ip.is_link_local() {
        Range::LinkLocal
    } else if a == 192 && b == 0 && c == 0 {
        Range::ProtocolAssignments
    } else if ip.is_documentation() {
        Range::Documentation
    } else if a == 192 && b == 88 && c == 99 {
        Range::Relay
    } else if a == 198 && b & 0xfe == 18 {
        Range::Benchmarking
    } else if ip.is_multicast() {
        Range::Multicast
    } else if ip.is_broadcast() {
        Range::Broadcast
    } else if a >= 240 {
        Range::Reserved
    } else {
        return None;
    })
}

/// The special range of an IPv6 address outside the translation prefixes, if it is in one.
/// Only `2000::/3` is global unicast; inside it, documentation space and the IETF protocol
/// assignments (`2001::/23`, but for the parts that are globally reachable) are not.
fn v6_range(ip: Ipv6Addr) -> Option<Range> {
    let s = ip.segments();
    Some(if s[0] & 0xff00 == 0xff00 {
        Range::Multicast
    } else if s[0] & 0xfe00 == 0xfc00 {
        Range::UniqueLocal
    } else if s[0] & 0xffc0 == 0xfe80 {
        Range::LinkLocal
    } else if s[0] & 0xffc0 == 0xfec0 {
        Range::SiteLocal
    } else if s[..4] == [0x100, 0, 0, 0] {
        Range::Discard
    } else if s[..3] == [0x64, 0xff9b, 1] {
        Range::LocalTranslation
    } else if s[0] & 0xe000 != 0x2000 {
        Range::NotGlobalUnicast
    } else if (s[0] == 0x2001 && s[1] == 0x0db8) || (s[0] == 0x3fff && s[1] & 0xf000 == 0) {
        Range::Documentation
    } else if s[0] == 0x2001 && s[1] < 0x200 {
        if s[1] == 2 && s[2] == 0 {
            Range::Benchmarking
        } else if ietf_global(s) {
            return None;
        } else {
            Range::ProtocolAssignments
        }
    } else {
        return None;
    })
}

/// The parts of `2001::/23` that IANA's registry calls globally reachable: PCP, TURN and
/// DNS-SD anycast (`2001:1::1` to `::3`), AMT (`2001:3::/32`), AS112 (`2001:4:112::/48`),
/// `ORCHIDv2` (`2001:20::/28`) and drone identifiers (`2001:30::/28`).
fn ietf_global(s: [u16; 8]) -> bool {
    (s[1] == 1 && s[2..7] == [0; 5] && (1..=3).contains(&s[7]))
        || s[1] == 3
        || (s[1] == 4 && s[2] == 0x112)
        || matches!(s[1] & 0xfff0, 0x20 | 0x30)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn special(ip: &str) -> Special {
        judge(ip.parse().unwrap()).expect_err(ip)
    }

    #[test]
    fn ipv4_special_ranges_are_refused() {
        for (ip, range) in [
            ("0.0.0.0", Range::Unspecified),
            ("0.1.2.3", Range::ThisNetwork),
            ("127.0.0.1", Range::Loopback),
            ("127.255.255.254", Range::Loopback),
            ("10.1.2.3", Range::Private),
            ("172.16.0.1", Range::Private),
            ("172.31.255.255", Range::Private),
            ("192.168.1.1", Range::Private),
            ("100.64.0.1", Range::Shared),
            ("100.127.255.255", Range::Shared),
            ("169.254.169.254", Range::LinkLocal),
            ("192.0.0.8", Range::ProtocolAssignments),
            ("192.0.2.1", Range::Documentation),
            ("198.51.100.7", Range::Documentation),
            ("203.0.113.9", Range::Documentation),
            ("192.88.99.1", Range::Relay),
            ("198.18.0.1", Range::Benchmarking),
            ("198.19.255.255", Range::Benchmarking),
            ("224.0.0.1", Range::Multicast),
            ("239.255.255.250", Range::Multicast),
            ("240.0.0.1", Range::Reserved),
            ("255.255.255.255", Range::Broadcast),
        ] {
            assert_eq!(special(ip).range, range, "{ip}");
            assert_eq!(special(ip).carried, None, "{ip}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.0.1.1",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
            "2001:4860:4860::8888",
            // Translation prefixes that carry a public IPv4 address.
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2001:0:808:808::f7f7:f7f7",
            // The globally reachable parts of 2001::/23.
            "2001:1::1",
            "2001:3::1",
            "2001:4:112::1",
            "2001:20::1",
            "2001:30::1",
            // An ISATAP identifier carrying a public address, under a global prefix.
            "2606:4700::5efe:808:808",
        ] {
            assert_eq!(judge(ip.parse().unwrap()), Ok(()), "{ip}");
        }
    }

    #[test]
    fn every_ipv6_form_carrying_a_private_ipv4_is_judged_by_it() {
        for (ip, v4, carrier, range) in [
            (
                "::ffff:127.0.0.1",
                "127.0.0.1",
                Carrier::Mapped,
                Range::Loopback,
            ),
            ("::ffff:a00:1", "10.0.0.1", Carrier::Mapped, Range::Private),
            (
                "::7f00:1",
                "127.0.0.1",
                Carrier::Compatible,
                Range::Loopback,
            ),
            (
                "::a9fe:a9fe",
                "169.254.169.254",
                Carrier::Compatible,
                Range::LinkLocal,
            ),
            (
                "::ffff:0:7f00:1",
                "127.0.0.1",
                Carrier::Translated,
                Range::Loopback,
            ),
            (
                "64:ff9b::7f00:1",
                "127.0.0.1",
                Carrier::Nat64,
                Range::Loopback,
            ),
            ("64:ff9b::a00:1", "10.0.0.1", Carrier::Nat64, Range::Private),
            (
                "2002:7f00:1::1",
                "127.0.0.1",
                Carrier::SixToFour,
                Range::Loopback,
            ),
            (
                "2002:c0a8:101::",
                "192.168.1.1",
                Carrier::SixToFour,
                Range::Private,
            ),
            (
                "2001:0:7f00:1::",
                "127.0.0.1",
                Carrier::TeredoServer,
                Range::Loopback,
            ),
            // Client 10.0.0.1, stored inverted; server 8.8.8.8 is public.
            (
                "2001:0:808:808::f5ff:fffe",
                "10.0.0.1",
                Carrier::TeredoClient,
                Range::Private,
            ),
            (
                "2606:4700::5efe:7f00:1",
                "127.0.0.1",
                Carrier::Isatap,
                Range::Loopback,
            ),
            (
                "2606:4700::200:5efe:a9fe:a9fe",
                "169.254.169.254",
                Carrier::Isatap,
                Range::LinkLocal,
            ),
        ] {
            let found = special(ip);
            assert_eq!(found.carried, Some((v4.parse().unwrap(), carrier)), "{ip}");
            assert_eq!(found.range, range, "{ip}");
        }
    }

    #[test]
    fn ipv6_special_ranges_are_refused() {
        for (ip, range) in [
            ("::", Range::Unspecified),
            ("::1", Range::Loopback),
            ("fc00::1", Range::UniqueLocal),
            ("fd12:3456::1", Range::UniqueLocal),
            ("fe80::1", Range::LinkLocal),
            ("febf::1", Range::LinkLocal),
            ("fec0::1", Range::SiteLocal),
            ("feff::1", Range::SiteLocal),
            ("ff02::1", Range::Multicast),
            ("100::1", Range::Discard),
            ("64:ff9b:1::a00:1", Range::LocalTranslation),
            ("64:ff9b:1:abcd::1", Range::LocalTranslation),
            ("2001:db8::1", Range::Documentation),
            ("3fff::1", Range::Documentation),
            ("3fff:fff::1", Range::Documentation),
            ("2001:2::1", Range::Benchmarking),
            ("2001:1::4", Range::ProtocolAssignments),
            ("2001:10::1", Range::ProtocolAssignments),
            ("2001:1ff::1", Range::ProtocolAssignments),
            ("4000::1", Range::NotGlobalUnicast),
            ("5f00::1", Range::NotGlobalUnicast),
            ("100:0:0:1::1", Range::NotGlobalUnicast),
            ("::1:0:0:1", Range::NotGlobalUnicast),
        ] {
            let found = special(ip);
            assert_eq!(found.range, range, "{ip}");
            assert_eq!(found.carried, None, "{ip}");
        }
        // Multicast is multicast, whatever its last bits look like.
        assert_eq!(special("ff02::5efe:808:808").range, Range::Multicast);
        // A link-local ISATAP identifier is link-local even when it carries a public address.
        assert_eq!(special("fe80::5efe:808:808").range, Range::LinkLocal);
    }

    #[test]
    fn reasons_name_the_address_and_what_carries_it() {
        assert_eq!(
            special("::7f00:1").to_string(),
            "::7f00:1, which carries 127.0.0.1 (IPv4-compatible), a loopback address"
        );
        assert_eq!(
            special("10.0.0.1").to_string(),
            "10.0.0.1, a private address"
        );
        assert_eq!(
            special("fec0::1").what(),
            "a site-local address (fec0::/10)"
        );
    }
}
