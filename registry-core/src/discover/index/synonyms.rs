//! Related words of the software-tool vocabulary, for expanding a query.
//!
//! Users do not speak in tool names: they say "remove" where the tool says `delete`, "folder"
//! where it says `directory`, "ticket" where it says `issue`. Each group below is a set of
//! words that, in requests to software tools, usually mean the same action or the same kind
//! of thing. A query's word that belongs to a group also looks for the group's other words,
//! at a lower weight ([`super::EXPANSION`]), so a tool that uses the query's own word still
//! ranks first.
//!
//! Where it comes from: written by hand from general knowledge of how software, APIs and their
//! users name things (CRUD verbs, version control, issue trackers, messaging, payments, the
//! web, files, data), not from any benchmark's queries or failures. Words are written plainly
//! and stemmed like every other term when the index is built. A word may be in several
//! groups; its expansions are the union. Keep the groups small and unambiguous: a word that
//! means many things in software (`run`, `set`, `open`) belongs only where its sense is
//! clear.
pub(crate) const GROUPS: &[&[&str]] = &[
    // Actions (verbs of CRUD and friends).
    &[
        "delete", "remove", "erase", "destroy", "drop", "purge", "discard", "trash",
    ],
    &["create", "make", "add", "new", "generate", "insert"],
    &["list", "enumerate", "all", "browse"],
    &[
        "get", "fetch", "retrieve", "read", "view", "show", "display", "lookup", "inspect",
    ],
    &[
        "update", "edit", "modify", "change", "alter", "rename", "patch",
    ],
    &["search", "find", "lookup", "query", "locate", "discover"],
    &["run", "execute", "invoke", "launch", "trigger"],
    &["start", "begin", "launch", "spawn"],
    &["stop", "halt", "terminate", "kill", "cancel", "abort"],
    &["send", "post", "publish", "deliver"],
    &["download", "save", "export"],
    &["upload", "import", "attach"],
    &["copy", "duplicate", "clone"],
    &["move", "relocate", "transfer"],
    &["write", "save", "store"],
    &["close", "resolve", "finish", "complete", "done"],
    &["assign", "give", "allocate", "delegate"],
    &["summary", "summarize", "overview", "digest", "recap"],
    &["translate", "translation", "language"],
    &["compare", "diff", "difference"],
    &["undo", "revert", "rollback", "restore"],
    &["merge", "combine", "land", "squash"],
    &["calculate", "compute", "sum", "add", "total", "arithmetic"],
    &["count", "number", "tally", "total"],
    &["navigate", "visit", "open", "goto", "browse"],
    &["click", "press", "tap"],
    &["type", "enter", "fill", "input"],
    &["screenshot", "capture", "snapshot"],
    &["scrape", "crawl", "extract", "fetch"],
    &["subscribe", "follow", "watch", "monitor"],
    &["schedule", "book", "plan"],
    &["log", "record", "trace"],
    &["deploy", "release", "ship", "rollout"],
    &["restart", "reboot", "reload"],
    &["scale", "resize"],
    &["validate", "verify", "check", "test"],
    &["install", "setup"],
    &["login", "signin", "authenticate", "auth"],
    // Things.
    &["issue", "ticket", "bug", "task", "story", "defect"],
    &["repository", "repo", "codebase"],
    &["pr", "pull", "mr"],
    &["branch", "ref"],
    &["commit", "changeset", "revision"],
    &["directory", "folder", "dir"],
    &["file", "document", "doc"],
    &["message", "chat", "dm", "post"],
    &["email", "mail", "inbox"],
    &[
        "user", "member", "person", "people", "account", "profile", "teammate",
    ],
    &["team", "group", "organization", "org"],
    &[
        "image",
        "picture",
        "photo",
        "pic",
        "illustration",
        "drawing",
        "draw",
    ],
    &["video", "clip", "movie", "recording"],
    &["web", "internet", "online"],
    &["page", "site", "website", "webpage", "url", "link"],
    &["calendar", "event", "meeting", "appointment"],
    &["payment", "charge", "pay", "transaction"],
    &["invoice", "bill", "billing"],
    &["refund", "reimburse", "chargeback", "dispute"],
    &["subscription", "plan", "recurring"],
    &["customer", "client", "buyer", "shopper"],
    &["price", "cost", "pricing", "fee"],
    &["product", "item", "sku"],
    &["database", "db", "sql", "table"],
    &["collection", "table"],
    &["record", "row", "entry", "document"],
    &["field", "column", "attribute", "property"],
    &["index", "indexes", "indices"],
    &["comment", "reply", "note", "remark", "annotation"],
    &["weather", "forecast", "temperature", "rain"],
    &[
        "map",
        "location",
        "place",
        "address",
        "geocode",
        "coordinates",
        "directions",
        "route",
    ],
    &["elevation", "altitude", "height"],
    &["distance", "far", "travel"],
    &["time", "date", "timezone", "clock", "hour"],
    &["news", "headline", "article"],
    &["error", "exception", "crash", "failure", "bug", "problem"],
    &["alert", "alarm", "notification", "incident"],
    &["monitor", "watch", "watcher", "observe"],
    &["secret", "password", "credential", "token", "key"],
    &["permission", "access", "restriction", "role", "privilege"],
    &["container", "pod", "docker"],
    &["cluster", "node", "server", "host"],
    &["namespace", "project", "workspace"],
    &[
        "configuration",
        "config",
        "setting",
        "settings",
        "preference",
    ],
    &["label", "tag"],
    &["status", "state", "health", "progress"],
    &["history", "log", "activity", "timeline"],
    &["tab", "window"],
    &["element", "button", "selector"],
    &["text", "content", "body"],
    &["content", "contents"],
    &["library", "package", "dependency", "module", "sdk"],
    &["documentation", "docs", "manual", "reference", "guide"],
    &["memory", "remember", "recall", "knowledge"],
    &["entity", "entities", "node"],
    &["relation", "relationship", "link", "connection"],
    &["contact", "lead", "person"],
    &["deal", "opportunity", "sale"],
    &["company", "business", "organization", "firm"],
    &["sprint", "iteration", "cycle"],
    &["epic", "initiative"],
    &["board", "kanban"],
    &["worklog", "timesheet", "hours"],
    &["transition", "status", "move"],
    &["channel", "room", "conversation"],
    &["thread", "conversation"],
    &["stock", "ticker", "share", "quote"],
    &["random", "roll", "dice"],
    &["echo", "repeat", "ping"],
    &["environment", "env", "stage", "staging", "production"],
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_small_lowercase_and_distinct() {
        for group in GROUPS {
            assert!((2..=12).contains(&group.len()), "{group:?}");
            for word in *group {
                assert!(word.bytes().all(|b| b.is_ascii_lowercase()), "{word}");
                assert_eq!(group.iter().filter(|w| w == &word).count(), 1, "{word}");
            }
        }
    }
}
