//! A fetched page as the model gets it: where it came from, what it was, its text (already
//! capped), and the hosts it passed through, which decide whether a cached copy may be handed
//! to another call (docs/architecture.md#web-access).

use super::reach::{HostVerdict, Reach};

/// One host a fetch passed through (the first is the one asked for; the others came from
/// redirects).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hop {
    /// The host.
    pub(crate) host: String,
    /// Whether its non-public addresses were allowed (an allow rule named it); a call whose
    /// rules do not name it must not get what came from there.
    pub(crate) named: bool,
}

/// A page, turned into text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Page {
    /// The address the content came from, after redirects.
    pub(crate) url: String,
    /// The content type the server gave, and how it became text.
    pub(crate) kind: String,
    /// The text, capped.
    pub(crate) text: String,
    /// The hosts on the way, in order.
    pub(crate) hops: Vec<Hop>,
}

impl Page {
    /// Whether a call with the rules `reach` could have fetched this page itself without
    /// asking: every host after the first is one it may reach, and every host whose private
    /// addresses were used is one its rules name. (The first host is the call's own, which its
    /// permission decided.)
    pub(crate) fn servable_to(&self, reach: &dyn Reach) -> bool {
        let first = self.hops.first().map(|hop| hop.host.as_str());
        self.hops.iter().all(|hop| {
            (!hop.named || reach.names(&hop.host))
                && (Some(hop.host.as_str()) == first
                    || reach.verdict(&hop.host) == HostVerdict::Allowed)
        })
    }

    /// The page as the model reads it: a short heading, then the text.
    pub(crate) fn render(&self, asked: &str, cached: bool) -> String {
        let mut out = format!("URL: {}\n", self.url);
        if self.url != asked {
            out.push_str(&format!("(redirected from {asked})\n"));
        }
        out.push_str(&format!("Content: {}", self.kind));
        if cached {
            out.push_str(" (from the daemon's 15-minute cache)");
        }
        out.push_str("\n\n");
        out.push_str(&self.text);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rules that name `named` and let `allowed` run without asking.
    #[derive(Debug)]
    struct Rules {
        named: &'static [&'static str],
        allowed: &'static [&'static str],
    }

    impl Reach for Rules {
        fn verdict(&self, host: &str) -> HostVerdict {
            if self.allowed.contains(&host) {
                HostVerdict::Allowed
            } else {
                HostVerdict::Ask
            }
        }

        fn names(&self, host: &str) -> bool {
            self.named.contains(&host)
        }
    }

    fn page(hops: &[(&str, bool)]) -> Page {
        Page {
            url: "http://b/".to_string(),
            kind: "text/plain".to_string(),
            text: "hi".to_string(),
            hops: hops
                .iter()
                .map(|&(host, named)| Hop {
                    host: host.to_string(),
                    named,
                })
                .collect(),
        }
    }

    #[test]
    fn a_page_from_a_private_address_goes_only_to_calls_whose_rules_name_the_host() {
        let private = page(&[("intranet", true)]);
        let naming = Rules {
            named: &["intranet"],
            allowed: &[],
        };
        let not_naming = Rules {
            named: &[],
            allowed: &["intranet"],
        };
        assert!(private.servable_to(&naming));
        assert!(!private.servable_to(&not_naming));
        assert!(page(&[("docs.rs", false)]).servable_to(&not_naming));
    }

    #[test]
    fn a_redirected_page_goes_only_to_calls_that_may_reach_every_host_on_the_way() {
        let redirected = page(&[("a", false), ("b", false)]);
        let only_a = Rules {
            named: &[],
            allowed: &[],
        };
        let both = Rules {
            named: &[],
            allowed: &["b"],
        };
        assert!(!redirected.servable_to(&only_a));
        assert!(redirected.servable_to(&both));
    }
}
