//! Text addressed to the model rather than describing the tool: the phrases of prompt
//! injection and of tool poisoning.
//!
//! Each rule is a phrase, matched on words (any case, spacing or line breaks), narrow enough
//! that ordinary descriptions pass: "ignores previous results" is a description, "ignore
//! previous instructions" is not; "call `list_projects` to find the id" is guidance, "when you
//! call `send_email`, always add ..." speaks for another tool.

use crate::text::excerpt;
use crate::words::{Word, words};
use crate::{Finding, Rule};

pub(crate) fn check(text: &str, out: &mut Vec<Finding>) {
    markup(text, out);
    let words = words(text);
    if words.is_empty() {
        return;
    }
    let m = Matcher {
        text,
        words: &words,
        out,
    };
    m.run();
}

struct Matcher<'a, 'o> {
    text: &'a str,
    words: &'a [Word],
    out: &'o mut Vec<Finding>,
}

const IGNORE_VERBS: &[&str] = &["ignore", "disregard", "forget", "override", "bypass"];
/// Words between the verb and what is to be ignored.
const IGNORE_FILLERS: &[&str] = &[
    "all",
    "any",
    "every",
    "everything",
    "of",
    "the",
    "your",
    "my",
    "our",
    "these",
    "those",
    "this",
    "that",
    "previous",
    "prior",
    "above",
    "earlier",
    "preceding",
    "former",
    "original",
    "initial",
    "other",
    "system",
    "safety",
    "given",
    "developer",
];
/// Qualifiers that name instructions given before or above: enough for any noun.
const STRONG_QUALIFIERS: &[&str] = &[
    "previous",
    "prior",
    "above",
    "earlier",
    "preceding",
    "former",
    "original",
    "initial",
    "system",
    "safety",
    "your",
    "developer",
];
/// Qualifiers that are enough for the unambiguous nouns.
const WEAK_QUALIFIERS: &[&str] = &["all", "any", "every", "other", "everything"];
/// Nouns that name instructions whatever qualifies them.
const INSTRUCTION_NOUNS: &[&str] = &[
    "instruction",
    "instructions",
    "directive",
    "directives",
    "guideline",
    "guidelines",
    "guardrail",
    "guardrails",
    "safeguard",
    "safeguards",
];
/// Nouns that name instructions only with a strong qualifier ("ignore any prompts" may be a
/// shell option; "ignore previous prompts" is not).
const QUALIFIED_NOUNS: &[&str] = &[
    "prompt",
    "prompts",
    "rule",
    "rules",
    "direction",
    "directions",
];

const ARTICLES: &[&str] = &["the", "a", "an"];
/// Words before `tool` that do not name one: "this tool", "any tool".
const NOT_A_NAME: &[&str] = &[
    "this", "the", "a", "an", "any", "each", "every", "other", "another", "that", "which", "same",
    "your", "my", "its", "our", "their", "one", "no", "some", "these", "those", "such", "current",
    "given", "new", "next", "first", "second", "last", "previous", "same", "that's", "it", "is",
    "be", "as", "of", "to", "for", "by", "with", "and", "or",
];
const CALL_FORMS: &[&str] = &[
    "call", "calls", "calling", "called", "invoke", "invokes", "invoking", "invoked",
];
const USE_FORMS: &[&str] = &[
    "use",
    "uses",
    "using",
    "used",
    "run",
    "runs",
    "running",
    "execute",
    "executes",
    "executing",
];
/// Words that make the rest of a sentence an instruction (with "make sure", "do not").
const MARKERS: &[&str] = &[
    "always",
    "must",
    "never",
    "also",
    "instead",
    "secretly",
    "silently",
    "quietly",
    "additionally",
    "ensure",
];
/// What "before using this tool" may ask for.
const ACTIONS: &[&str] = &[
    "call", "read", "run", "invoke", "use", "fetch", "send", "pass", "include", "open", "execute",
    "load", "access", "upload", "copy", "list", "get", "retrieve", "print", "cat",
];
const AUDIENCE: &[&str] = &[
    "user", "users", "user's", "human", "humans", "person", "operator",
];
const TELL_VERBS: &[&str] = &[
    "tell", "inform", "mention", "reveal", "show", "disclose", "alert", "notify", "say",
];

impl Matcher<'_, '_> {
    fn run(mut self) {
        for i in 0..self.words.len() {
            self.ignore_instructions(i);
            self.role_change(i);
            self.system_prompt(i);
            self.hidden_from_user(i);
            self.cross_tool(i);
        }
    }

    fn word(&self, i: usize) -> Option<&Word> {
        self.words.get(i)
    }

    /// Whether word `i` exists and is one of `options`.
    fn is(&self, i: usize, options: &[&str]) -> bool {
        self.word(i).is_some_and(|word| word.is(options))
    }

    /// Whether words `from..=to` are in one sentence.
    fn one_sentence(&self, from: usize, to: usize) -> bool {
        to < self.words.len() && (from + 1..=to).all(|k| !self.words[k].sentence_start)
    }

    /// Whether words `i..` spell `phrase` within one sentence; the index of its last word.
    fn phrase(&self, i: usize, phrase: &[&[&str]]) -> Option<usize> {
        let last = i + phrase.len() - 1;
        (self.one_sentence(i, last)
            && phrase
                .iter()
                .enumerate()
                .all(|(offset, options)| self.is(i + offset, options)))
        .then_some(last)
    }

    /// `i` past any articles.
    fn skip_articles(&self, mut i: usize) -> usize {
        while self.is(i, ARTICLES) {
            i += 1;
        }
        i
    }

    /// "send_email tool", "tool `send_email`", "tool named x": a tool named explicitly; the
    /// index of the last word of the reference.
    fn named_tool(&self, i: usize) -> Option<usize> {
        let word = self.word(i)?;
        if self.is(i + 1, &["tool", "tools"]) && !word.is(NOT_A_NAME) && self.one_sentence(i, i + 1)
        {
            return Some(i + 1);
        }
        if word.is(&["tool"]) {
            if self
                .word(i + 1)
                .is_some_and(|next| next.code || next.is_snake())
                && self.one_sentence(i, i + 1)
            {
                return Some(i + 1);
            }
            if self.is(i + 1, &["named", "called"]) && self.one_sentence(i, i + 2) {
                return Some(i + 2);
            }
        }
        None
    }

    /// A tool named explicitly, or an identifier that may name one (`` `search` ``,
    /// `send_email`); the index of the last word.
    fn any_ref(&self, i: usize) -> Option<usize> {
        self.named_tool(i).or_else(|| {
            self.word(i)
                .filter(|word| word.code || word.is_snake())
                .map(|_| i)
        })
    }

    /// Whether a tool reference ends at word `end`: `send_email`, "the deploy tool".
    fn ref_ends_at(&self, end: usize) -> bool {
        let Some(word) = self.word(end) else {
            return false;
        };
        word.code
            || word.is_snake()
            || (end > 0 && self.named_tool(end - 1) == Some(end))
            || (end > 1 && self.named_tool(end - 2) == Some(end))
    }

    /// The first word of `options` after `after`, within `window` words and one sentence.
    fn find_after(&self, after: usize, window: usize, options: &[&str]) -> Option<usize> {
        (after + 1..=after + window)
            .take_while(|k| self.one_sentence(after, *k))
            .find(|k| self.is(*k, options))
    }

    /// The first word that makes the rest of the sentence an instruction ([`MARKERS`], "make
    /// sure", "do not", "don't") after `after`, within 20 words and one sentence; the index of
    /// its last word.
    fn find_marker(&self, after: usize) -> Option<usize> {
        (after + 1..=after + 20)
            .take_while(|k| self.one_sentence(after, *k))
            .find_map(|k| {
                if self.is(k, MARKERS) || self.is(k, &["don't", "dont"]) {
                    Some(k)
                } else {
                    self.phrase(k, &[&["make"], &["sure"]])
                        .or_else(|| self.phrase(k, &[&["do"], &["not"]]))
                }
            })
    }

    fn push(&mut self, rule: Rule, from: usize, to: usize, what: &str) {
        let range = self.words[from].range.start..self.words[to].range.end;
        let shown = excerpt(self.text, range.clone());
        self.out.push(Finding::new(rule, range, what, shown));
    }

    /// "ignore (all) previous instructions", "disregard your guidelines", "forget the above".
    fn ignore_instructions(&mut self, i: usize) {
        if !self.is(i, IGNORE_VERBS) {
            return;
        }
        let (mut strong, mut weak) = (false, false);
        let mut j = i + 1;
        while j <= i + 6 && self.one_sentence(i, j) && self.is(j, IGNORE_FILLERS) {
            strong |= self.is(j, STRONG_QUALIFIERS);
            weak |= self.is(j, WEAK_QUALIFIERS);
            j += 1;
        }
        let noun = self.one_sentence(i, j)
            && ((self.is(j, INSTRUCTION_NOUNS) && (strong || weak))
                || (self.is(j, QUALIFIED_NOUNS) && strong));
        if noun {
            self.push(
                Rule::IgnoreInstructions,
                i,
                j,
                "an instruction to ignore other instructions",
            );
        } else if j > i + 1 && self.is(j - 1, &["above"]) {
            self.push(
                Rule::IgnoreInstructions,
                i,
                j - 1,
                "an instruction to ignore other instructions",
            );
        }
    }

    /// "you are now", "you are no longer", "pretend to be", "from now on, you", "your new
    /// role".
    fn role_change(&mut self, i: usize) {
        const WHAT: &str = "an attempt to give the model a new role";
        let at_clause_start = self.words[i].clause_start;
        let found = if at_clause_start {
            self.phrase(i, &[&["you"], &["are"], &["now"]])
                .or_else(|| self.phrase(i, &[&["you're"], &["now"]]))
                .or_else(|| self.phrase(i, &[&["you"], &["are"], &["no"], &["longer"]]))
                .or_else(|| self.phrase(i, &[&["you're"], &["no"], &["longer"]]))
        } else {
            None
        }
        .or_else(|| self.phrase(i, &[&["pretend"], &["to"], &["be"]]))
        .or_else(|| self.phrase(i, &[&["pretend"], &["you", "you're", "that"]]))
        .or_else(|| {
            self.phrase(
                i,
                &[
                    &["your"],
                    &["new"],
                    &["role", "task", "instructions", "goal", "purpose", "persona"],
                ],
            )
        })
        .or_else(|| {
            let now_on = self.phrase(i, &[&["from"], &["now"], &["on"]])?;
            self.find_after(now_on, 3, &["you", "your", "you're"])
        });
        if let Some(last) = found {
            self.push(Rule::RoleChange, i, last, WHAT);
        }
    }

    /// "system prompt", and asking for the model's own instructions: "reveal your
    /// instructions", "print your prompt".
    fn system_prompt(&mut self, i: usize) {
        let found = self
            .phrase(i, &[&["system"], &["prompt", "prompts"]])
            .or_else(|| {
                self.phrase(
                    i,
                    &[
                        &[
                            "reveal", "print", "repeat", "output", "show", "leak", "disclose",
                        ],
                        &["your"],
                        &["instructions", "prompt", "prompts", "rules"],
                    ],
                )
            });
        if let Some(last) = found {
            self.push(
                Rule::SystemPrompt,
                i,
                last,
                "a reference to the model's system prompt",
            );
        }
    }

    /// "do not tell the user", "never mention this to the user", "without telling the user",
    /// "don't let the user know", "hide this from the user".
    fn hidden_from_user(&mut self, i: usize) {
        const WHAT: &str = "an instruction to keep something from the user";
        let verb = self
            .phrase(i, &[&["do", "must", "should"], &["not"]])
            .or_else(|| self.phrase(i, &[&["don't", "dont", "never", "mustn't", "shouldn't"]]))
            .map(|last| last + 1);
        if let Some(verb) = verb {
            if self.is(verb, TELL_VERBS)
                && self.one_sentence(i, verb)
                && let Some(audience) = self.find_after(verb, 4, AUDIENCE)
            {
                self.push(Rule::HiddenFromUser, i, audience, WHAT);
                return;
            }
            if self.is(verb, &["let"])
                && let Some(audience) = self.find_after(verb, 2, AUDIENCE)
                && let Some(know) = self.find_after(audience, 2, &["know", "see", "notice"])
            {
                self.push(Rule::HiddenFromUser, i, know, WHAT);
                return;
            }
        }
        if self.is(i, &["without"])
            && self.is(i + 1, &["telling", "informing", "alerting", "letting"])
            && let Some(audience) = self.find_after(i + 1, 3, AUDIENCE)
        {
            self.push(Rule::HiddenFromUser, i, audience, WHAT);
            return;
        }
        if self.is(
            i,
            &["hide", "conceal", "hidden", "concealed", "secret", "keep"],
        ) {
            let from = (i + 1..=i + 6)
                .take_while(|k| self.one_sentence(i, *k))
                .find(|k| self.is(*k, &["from"]));
            if let Some(from) = from {
                let audience = self.skip_articles(from + 1);
                let audience = if self.is(audience, &["your"]) {
                    audience + 1
                } else {
                    audience
                };
                if self.is(audience, AUDIENCE) && self.one_sentence(i, audience) {
                    self.push(Rule::HiddenFromUser, i, audience, WHAT);
                }
            }
        }
    }

    /// Instructions about other tools (tool poisoning and shadowing).
    fn cross_tool(&mut self, i: usize) {
        const WHAT: &str = "an instruction to the model about other tools";
        if let Some(last) = self
            .before_using(i)
            .or_else(|| self.when_calling(i))
            .or_else(|| self.instead_of(i))
            .or_else(|| self.never_call(i))
            .or_else(|| self.tool_must(i))
        {
            self.push(Rule::CrossTool, i, last, WHAT);
        }
    }

    /// "before using this tool, read ...", "before calling `x`, send ...": a precondition
    /// that asks for an action.
    fn before_using(&self, i: usize) -> Option<usize> {
        if !self.is(i, &["before"]) {
            return None;
        }
        let verb = i + 1;
        if !self.is(
            verb,
            &[
                "using",
                "calling",
                "invoking",
                "running",
                "executing",
                "use",
                "call",
                "invoke",
                "run",
                "execute",
            ],
        ) {
            return None;
        }
        let mut object = verb + 1;
        while self.is(
            object,
            &["this", "the", "a", "an", "any", "another", "other", "these"],
        ) {
            object += 1;
        }
        let object_end = if self.is(object, &["tool", "tools", "function"]) {
            object
        } else {
            self.any_ref(object)?
        };
        if !self.one_sentence(i, object_end) {
            return None;
        }
        self.find_after(object_end, 20, ACTIONS)
    }

    /// "when you call `send_email`, always ...", "whenever the deploy tool is used, also
    /// ...", "after invoking `x`, never ...".
    fn when_calling(&self, i: usize) -> Option<usize> {
        let trigger_end = if self.is(i, &["when", "whenever", "after", "once", "if"]) {
            i
        } else {
            self.phrase(i, &[&["every", "each"], &["time"]])?
        };
        let verb = (trigger_end + 1..=trigger_end + 6)
            .take_while(|k| self.one_sentence(i, *k))
            .find(|k| self.is(*k, CALL_FORMS) || self.is(*k, USE_FORMS))?;
        let calls = self.is(verb, CALL_FORMS);
        let after = self.skip_articles(verb + 1);
        let object_after = if calls {
            self.any_ref(after)
        } else {
            self.named_tool(after)
        };
        let subject_before = (trigger_end + 1..verb).rev().find(|k| {
            if calls {
                self.ref_ends_at(*k)
            } else {
                self.is(*k, &["tool", "tools"]) && *k > 0 && self.named_tool(*k - 1) == Some(*k)
            }
        });
        let ref_end = object_after.or(subject_before.map(|_| verb))?;
        if !self.one_sentence(i, ref_end) {
            return None;
        }
        self.find_marker(ref_end)
    }

    /// "instead of calling `x`", "instead of the search tool", "use this tool instead of
    /// `grep`", and the same with "rather than".
    fn instead_of(&self, i: usize) -> Option<usize> {
        let of = self
            .phrase(i, &[&["instead"], &["of"]])
            .or_else(|| self.phrase(i, &[&["rather"], &["than"]]))?;
        let next = of + 1;
        let after_self = i >= 2
            && self.is(i - 2, &["this"])
            && self.is(i - 1, &["tool", "function"])
            && self.one_sentence(i - 2, i);
        let end = if self.is(next, &["calling", "invoking"]) {
            self.any_ref(self.skip_articles(next + 1))
        } else if self.is(next, &["using"]) {
            let object = self.skip_articles(next + 1);
            if after_self {
                self.any_ref(object)
            } else {
                self.named_tool(object)
            }
        } else {
            let object = self.skip_articles(next);
            if after_self {
                self.any_ref(object)
            } else {
                self.named_tool(object)
            }
        }?;
        self.one_sentence(i, end).then_some(end)
    }

    /// "never call `deploy`", "do not invoke the cleanup tool".
    fn never_call(&self, i: usize) -> Option<usize> {
        let verb = self
            .phrase(i, &[&["do", "must", "should"], &["not"]])
            .or_else(|| self.phrase(i, &[&["don't", "dont", "never", "mustn't", "shouldn't"]]))?
            + 1;
        if !self.is(verb, &["call", "invoke"]) {
            return None;
        }
        let end = self.any_ref(self.skip_articles(verb + 1))?;
        self.one_sentence(i, end).then_some(end)
    }

    /// "the send_email tool must ...": another tool named, then told what to do.
    fn tool_must(&self, i: usize) -> Option<usize> {
        let end = self.named_tool(i)?;
        let modal = end + 1;
        (self.is(modal, &["must", "should", "shall"]) && self.one_sentence(i, modal))
            .then_some(modal)
    }
}

/// Tags that pose as instructions: `<important>`, `</system>`, `<|im_start|>`, `<<SYS>>`,
/// `[INST]`.
const TAGS: &[&str] = &[
    "important",
    "system",
    "system-reminder",
    "system_reminder",
    "system-prompt",
    "system_prompt",
    "instructions",
    "instruction",
    "admin",
    "assistant",
    "hidden",
    "critical",
    "override",
    "sys",
    "tool_instructions",
];

fn markup(text: &str, out: &mut Vec<Finding>) {
    const WHAT: &str = "markup that poses as instructions to the model";
    for (start, _) in text.match_indices('<') {
        let rest = &text[start + 1..];
        let end = if let Some(inner) = rest.strip_prefix('|') {
            // `<|im_start|>`, `<|system|>`, `<|endoftext|>`
            let name_len = inner
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(inner.len());
            (name_len > 0 && inner[name_len..].starts_with("|>")).then(|| start + 2 + name_len + 2)
        } else {
            let inner = rest.strip_prefix('/').unwrap_or(rest);
            let name_len = inner
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(inner.len());
            let name = inner[..name_len].to_ascii_lowercase();
            if TAGS.contains(&name.as_str()) {
                let after = &inner[name_len..];
                let close = after
                    .char_indices()
                    .take(100)
                    .find(|(_, c)| matches!(c, '>' | '<' | '\n'))
                    .filter(|(_, c)| *c == '>')
                    .map(|(at, _)| at);
                // `<system>` or `<system priority="high">`, not `<system-id>` or `a <system`.
                close
                    .filter(|at| *at == 0 || after.starts_with([' ', '\t']))
                    .map(|at| text.len() - after.len() + at + 1)
            } else {
                None
            }
        };
        if let Some(end) = end {
            out.push(Finding::new(
                Rule::PromptMarkup,
                start..end,
                WHAT,
                excerpt(text, start..end),
            ));
        }
    }
    for token in ["[INST]", "[/INST]"] {
        for (start, _) in text.match_indices(token) {
            let range = start..start + token.len();
            out.push(Finding::new(
                Rule::PromptMarkup,
                range.clone(),
                WHAT,
                excerpt(text, range),
            ));
        }
    }
}
