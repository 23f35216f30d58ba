//! Calls that reach the network from the daemon (`fetch`, `web_search`) as the permission
//! rules see them (docs/architecture.md#web-access): the host a call reaches, which rules allow
//! it, the rule "allow always" remembers, the line a question shows, and the rules a call
//! carries for the hosts it meets after its permission was decided.

use std::path::Path;
use std::time::UNIX_EPOCH;

use protocol::{Mode, PermissionClass};
use serde_json::{Value, json};

use super::rules::PermissionRules;
use super::{AlwaysRule, Call, CallTool, ProtectedPaths, Verdict, check};
use crate::tools::Tool;
use crate::web::{HostVerdict, Reach};

/// The most characters of a URL or query a question shows.
const MAX_SHOWN_CHARS: usize = 200;

/// The host `call` reaches: the URL's for `fetch`, the configured service's for `web_search`;
/// `Err` (the model's answer) when there is none to reach.
pub(crate) fn host(call: &Call<'_>) -> Result<String, String> {
    match call.tool {
        CallTool::Builtin(Tool::WebSearch) => call.search_host.map(str::to_string).ok_or_else(|| {
            "web_search is not configured: the user can add a [web_search] section to config.toml"
                .to_string()
        }),
        _ => Ok(fetch_url(call)?.host_str().unwrap_or_default().to_string()),
    }
}

/// The URL of a `fetch` call.
fn fetch_url(call: &Call<'_>) -> Result<url::Url, String> {
    let url = call.args["url"]
        .as_str()
        .ok_or("fetch needs a `url` (an http or https URL)")?;
    crate::web::fetcher::parse(url)
}

/// Why a `fetch` call is refused before anyone is asked: its host is an address that is not
/// public, or a name of this machine, and no allow rule names it. A person's yes would not let
/// it through (only a rule does), so nobody is asked.
pub(crate) fn refused_early(call: &Call<'_>, rules: &PermissionRules) -> Option<String> {
    if call.tool != CallTool::Builtin(Tool::Fetch) {
        return None;
    }
    let url = fetch_url(call).ok()?;
    let host = url.host()?;
    let named = rules.names_host(call.tool, url.host_str().unwrap_or_default());
    crate::web::resolver::check_unresolved(&host, named, "fetch")
        .err()
        .map(|refused| refused.to_string())
}

/// Whether the session's always-rules or the allow rules let a call of `tool` reach `host`.
pub(crate) fn allowed(
    host: &str,
    tool: CallTool<'_>,
    always: &[AlwaysRule],
    rules: &PermissionRules,
) -> bool {
    always
        .iter()
        .any(|rule| matches!(rule, AlwaysRule::Host(h) if h == host))
        || rules
            .allow_rules(tool)
            .iter()
            .any(|rule| rule.allows_path(host))
}

/// The rule "allow always" on `call` remembers: its host.
pub(crate) fn rule_for(call: &Call<'_>) -> Option<AlwaysRule> {
    host(call).ok().map(AlwaysRule::Host)
}

/// One line saying what the call would do.
pub(crate) fn summary(call: &Call<'_>) -> String {
    let shown = |value: &Value| {
        let text = value.as_str().unwrap_or("?");
        let mut shown: String = text.chars().take(MAX_SHOWN_CHARS).collect();
        if shown.len() < text.len() {
            shown.push('…');
        }
        shown
    };
    match call.tool {
        CallTool::Builtin(Tool::WebSearch) => format!(
            "search the web for \"{}\" (at {})",
            shown(&call.args["query"]),
            call.search_host.unwrap_or("?")
        ),
        _ => format!("fetch {}", shown(&call.args["url"])),
    }
}

/// The rules a network call carries, as they stood when its permission was decided: the
/// mode, the run's grants, the session's always-rules and the configured rules.
#[derive(Debug)]
pub(crate) struct NetworkRules {
    /// The tool whose rules apply.
    pub(crate) tool: Tool,
    /// The session's mode.
    pub(crate) mode: Mode,
    /// The run's grants.
    pub(crate) grants: Vec<PermissionClass>,
    /// The session's "allow always" rules.
    pub(crate) always: Vec<AlwaysRule>,
    /// The configured allow and deny rules.
    pub(crate) rules: PermissionRules,
}

impl Reach for NetworkRules {
    fn verdict(&self, host: &str) -> HostVerdict {
        // The same decision as a call of its own to that host.
        let args = json!({ "url": format!("https://{host}/") });
        let protected = ProtectedPaths::default();
        let call = Call {
            tool: CallTool::Builtin(Tool::Fetch),
            args: &args,
            cwd: Path::new("/"),
            plan_file: Path::new("/"),
            sandbox: false,
            path_var: None,
            protected: &protected,
            since: UNIX_EPOCH,
            lookup_changed_before: false,
            target: None,
            search_host: None,
        };
        match check(call, self.mode, &self.grants, &self.always, &self.rules) {
            Verdict::Allow => HostVerdict::Allowed,
            Verdict::Ask(_) => HostVerdict::Ask,
            Verdict::Deny(why) => HostVerdict::Denied(why),
        }
    }

    fn names(&self, host: &str) -> bool {
        self.rules.names_host(CallTool::Builtin(self.tool), host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: &[&str], deny: &[&str]) -> PermissionRules {
        PermissionRules {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            deny: deny.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn call<'a>(tool: Tool, args: &'a Value, protected: &'a ProtectedPaths) -> Call<'a> {
        Call {
            tool: CallTool::Builtin(tool),
            args,
            cwd: Path::new("/work"),
            plan_file: Path::new("/work/plan.md"),
            sandbox: true,
            path_var: None,
            protected,
            since: UNIX_EPOCH,
            lookup_changed_before: false,
            target: None,
            search_host: Some("api.search.brave.com"),
        }
    }

    fn fetch_verdict(
        url: &str,
        mode: Mode,
        grants: &[PermissionClass],
        rules: &PermissionRules,
    ) -> Verdict {
        let args = json!({ "url": url });
        let protected = ProtectedPaths::default();
        check(
            call(Tool::Fetch, &args, &protected),
            mode,
            grants,
            &[],
            rules,
        )
    }

    #[test]
    fn fetch_asks_in_every_mode_but_bypass_auto_mode_included() {
        let none = PermissionRules::default();
        for mode in [Mode::Default, Mode::AcceptEdits, Mode::Auto, Mode::Plan] {
            assert_eq!(
                fetch_verdict("https://docs.rs/", mode, &[], &none),
                Verdict::Ask(None),
                "{mode:?}"
            );
        }
        assert_eq!(
            fetch_verdict("https://docs.rs/", Mode::Bypass, &[], &none),
            Verdict::Allow
        );
        let granted = [PermissionClass::Network];
        assert_eq!(
            fetch_verdict("https://docs.rs/", Mode::Default, &granted, &none),
            Verdict::Allow
        );
        // Other grants are not web access.
        let others = [
            PermissionClass::Command,
            PermissionClass::Write,
            PermissionClass::Mcp,
        ];
        assert_eq!(
            fetch_verdict("https://docs.rs/", Mode::Auto, &others, &none),
            Verdict::Ask(None)
        );
    }

    #[test]
    fn host_rules_allow_and_deny_by_host_glob() {
        let rules = rules(
            &["fetch:docs.rs", "fetch:*.github.com"],
            &["fetch:*.internal"],
        );
        let at = |url| fetch_verdict(url, Mode::Default, &[], &rules);
        assert_eq!(at("https://docs.rs/htmd/latest"), Verdict::Allow);
        assert_eq!(at("https://api.github.com/repos"), Verdict::Allow);
        assert_eq!(at("https://github.com/"), Verdict::Ask(None));
        assert_eq!(at("https://docs.rs.evil.example/"), Verdict::Ask(None));
        let denied = fetch_verdict(
            "http://wiki.corp.internal/",
            Mode::Bypass,
            &[PermissionClass::Network],
            &rules,
        );
        assert!(
            matches!(&denied, Verdict::Deny(why) if why.contains("fetch:*.internal")),
            "{denied:?}"
        );
        // A final dot names the same host: it is judged as the host without it.
        for url in [
            "http://wiki.corp.internal./",
            "http://WIKI.corp.internal../x",
        ] {
            let denied = fetch_verdict(url, Mode::Bypass, &[PermissionClass::Network], &rules);
            assert!(matches!(&denied, Verdict::Deny(_)), "{url}: {denied:?}");
        }
        assert_eq!(at("https://docs.rs./htmd"), Verdict::Allow);
    }

    #[test]
    fn a_local_address_is_refused_without_asking_unless_a_rule_names_it() {
        let none = PermissionRules::default();
        for url in [
            "http://127.0.0.1:3000/",
            "http://[::1]/",
            "http://localhost:8080/",
            "http://169.254.169.254/latest",
        ] {
            let verdict = fetch_verdict(url, Mode::Default, &[], &none);
            assert!(
                matches!(&verdict, Verdict::Deny(why) if why.starts_with("refused: ")),
                "{url}: {verdict:?}"
            );
        }
        let naming = rules(&["fetch:localhost"], &[]);
        assert_eq!(
            fetch_verdict("http://localhost:8080/", Mode::Auto, &[], &naming),
            Verdict::Allow
        );
        // A name is judged when it is resolved, not here.
        assert_eq!(
            fetch_verdict("http://intranet.example/", Mode::Auto, &[], &none),
            Verdict::Ask(None)
        );
    }

    #[test]
    fn a_url_that_is_not_http_is_refused_without_asking() {
        let none = PermissionRules::default();
        for url in ["file:///etc/passwd", "ftp://x/", "not a url", "https://"] {
            let verdict = fetch_verdict(url, Mode::Default, &[], &none);
            assert!(matches!(verdict, Verdict::Deny(_)), "{url}: {verdict:?}");
        }
    }

    #[test]
    fn allow_always_remembers_the_host_and_the_question_names_the_url() {
        let args = json!({ "url": "https://docs.rs/htmd" });
        let protected = ProtectedPaths::default();
        let asked = call(Tool::Fetch, &args, &protected);
        let rule = super::super::rule_for(asked).unwrap();
        assert_eq!(rule, AlwaysRule::Host("docs.rs".to_string()));
        assert_eq!(super::super::summary(asked), "fetch https://docs.rs/htmd");
        let other = json!({ "url": "https://docs.rs/serde" });
        let again = call(Tool::Fetch, &other, &protected);
        let verdict = check(again, Mode::Auto, &[], &[rule], &PermissionRules::default());
        assert_eq!(verdict, Verdict::Allow);
    }

    #[test]
    fn web_search_is_judged_by_the_service_host() {
        let args = json!({ "query": "rust htmd" });
        let protected = ProtectedPaths::default();
        let search = call(Tool::WebSearch, &args, &protected);
        assert_eq!(
            super::super::summary(search),
            "search the web for \"rust htmd\" (at api.search.brave.com)"
        );
        let allowing = rules(&["web_search:api.search.brave.com"], &[]);
        assert_eq!(
            check(search, Mode::Auto, &[], &[], &allowing),
            Verdict::Allow
        );
        assert_eq!(
            check(search, Mode::Auto, &[], &[], &PermissionRules::default()),
            Verdict::Ask(None)
        );
        let unconfigured = Call {
            search_host: None,
            ..search
        };
        assert!(matches!(
            check(unconfigured, Mode::Bypass, &[], &[], &allowing),
            Verdict::Deny(_)
        ));
    }

    #[test]
    fn only_a_rule_that_names_a_host_lets_it_use_private_addresses() {
        let network = |allow: &[&str]| NetworkRules {
            tool: Tool::Fetch,
            mode: Mode::Default,
            grants: Vec::new(),
            always: Vec::new(),
            rules: rules(allow, &[]),
        };
        assert!(network(&["fetch:localhost"]).names("localhost"));
        assert!(network(&["fetch:*.corp.example"]).names("wiki.corp.example"));
        assert!(!network(&["fetch:*"]).names("localhost"));
        assert!(!network(&["*:*"]).names("localhost"));
        assert!(!network(&["fetch:docs.rs"]).names("localhost"));
        assert!(!network(&["bash:localhost"]).names("localhost"));
    }

    #[test]
    fn a_hop_is_judged_as_a_call_of_its_own_would_be() {
        let carried = NetworkRules {
            tool: Tool::Fetch,
            mode: Mode::Auto,
            grants: Vec::new(),
            always: vec![AlwaysRule::Host("b.example".to_string())],
            rules: rules(&["fetch:a.example"], &["fetch:*.internal"]),
        };
        assert_eq!(carried.verdict("a.example"), HostVerdict::Allowed);
        assert_eq!(carried.verdict("b.example"), HostVerdict::Allowed);
        assert_eq!(carried.verdict("c.example"), HostVerdict::Ask);
        assert!(matches!(
            carried.verdict("x.internal"),
            HostVerdict::Denied(_)
        ));
        let bypass = NetworkRules {
            mode: Mode::Bypass,
            ..carried
        };
        assert_eq!(bypass.verdict("c.example"), HostVerdict::Allowed);
    }
}
