//! Federated upstream MCP servers across replicas: the upstream tools each replica withholds
//! (reported by the replica), and the operators' acceptances of them
//! (`registry-admin upstream accept`), which every replica with that upstream applies.

use std::time::SystemTime;

use tokio_postgres::Row;

use crate::error::Error;
use crate::plane::ControlPlane;
use crate::text;

/// The most offers one report records (a replica's upstream tools are bounded by
/// `registry_mcp::upstream::MAX_UPSTREAMS` × `MAX_TOOLS_PER_UPSTREAM`).
pub const MAX_UPSTREAM_OFFERS: usize = 10_000;

/// How long an offer counts after its replica last reported it
/// ([`ControlPlane::report_upstream_offers`], [`ControlPlane::refresh_upstream_offers`]): an
/// older one is a dead replica's, not listed and never accepted. A live replica refreshes its
/// offers well within it.
pub const UPSTREAM_OFFER_TTL: std::time::Duration = std::time::Duration::from_secs(60);

/// An upstream tool a replica withholds for a change or as new, and what its upstream
/// offers: the digests an acceptance is bound to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct UpstreamOffer {
    /// The replica that reported it (ignored when reporting: it is this plane's replica).
    pub replica: String,
    /// The upstream.
    pub upstream: String,
    /// The registry's name of the tool.
    pub tool: String,
    /// The upstream's own name of it.
    pub upstream_tool: String,
    /// The digest of the definition offered (`sha256:…`).
    pub definition: String,
    /// The digest of the annotations offered.
    pub annotations: String,
    /// Why it is withheld, as `explain()` says.
    pub withheld: String,
    /// The definition offered, as the upstream's JSON text, for the operator to review
    /// (`None` when the replica did not report it). Untrusted: escape it before printing.
    pub offered: Option<String>,
}

impl UpstreamOffer {
    /// An offer to report.
    pub fn new(
        upstream: impl Into<String>,
        tool: impl Into<String>,
        upstream_tool: impl Into<String>,
        definition: impl Into<String>,
        annotations: impl Into<String>,
        withheld: impl Into<String>,
    ) -> UpstreamOffer {
        UpstreamOffer {
            replica: String::new(),
            upstream: upstream.into(),
            tool: tool.into(),
            upstream_tool: upstream_tool.into(),
            definition: definition.into(),
            annotations: annotations.into(),
            withheld: withheld.into(),
            offered: None,
        }
    }

    /// The offer with the definition's text, as the upstream gave it (JSON), for the operator
    /// to review before accepting it.
    #[must_use]
    pub fn with_offered(mut self, definition: impl Into<String>) -> UpstreamOffer {
        self.offered = Some(definition.into());
        self
    }
}

/// An operator's acceptance of one offer: the tool whose upstream offers exactly these
/// digests is pinned and served.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct UpstreamAcceptance {
    /// Its place in the order of acceptances.
    pub seq: i64,
    /// When it was recorded.
    pub at: SystemTime,
    /// The upstream.
    pub upstream: String,
    /// The registry's name of the tool.
    pub tool: String,
    /// The upstream's own name of it.
    pub upstream_tool: String,
    /// The digest of the definition accepted.
    pub definition: String,
    /// The digest of the annotations accepted.
    pub annotations: String,
    /// Who accepted it (`registry-admin (alice)`).
    pub origin: String,
}

const OFFER_COLUMNS: &str = "SELECT replica, upstream, tool, upstream_tool, definition, annotations, withheld, offered FROM upstream_offers";

const ACCEPTANCE_COLUMNS: &str =
    "seq, at, upstream, tool, upstream_tool, definition, annotations, origin";

fn offer_of(row: &Row) -> UpstreamOffer {
    UpstreamOffer {
        replica: row.get(0),
        upstream: row.get(1),
        tool: row.get(2),
        upstream_tool: row.get(3),
        definition: row.get(4),
        annotations: row.get(5),
        withheld: row.get(6),
        offered: row.get(7),
    }
}

fn acceptance_of(row: &Row) -> UpstreamAcceptance {
    UpstreamAcceptance {
        seq: row.get(0),
        at: row.get(1),
        upstream: row.get(2),
        tool: row.get(3),
        upstream_tool: row.get(4),
        definition: row.get(5),
        annotations: row.get(6),
        origin: row.get(7),
    }
}

impl ControlPlane {
    /// Records `offers` as everything this replica withholds now, replacing its previous
    /// report (in one transaction). At most [`MAX_UPSTREAM_OFFERS`]; the rest are left out.
    pub async fn report_upstream_offers(&self, offers: &[UpstreamOffer]) -> Result<(), Error> {
        let offers = &offers[..offers.len().min(MAX_UPSTREAM_OFFERS)];
        let column = |get: fn(&UpstreamOffer) -> &str| -> Vec<String> {
            offers
                .iter()
                .map(|offer| text::owned(get(offer).to_owned()))
                .collect()
        };
        let upstreams = column(|offer| &offer.upstream);
        let tools = column(|offer| &offer.tool);
        let upstream_tools = column(|offer| &offer.upstream_tool);
        let definitions = column(|offer| &offer.definition);
        let annotations = column(|offer| &offer.annotations);
        let withheld = column(|offer| &offer.withheld);
        let offered: Vec<Option<String>> = offers
            .iter()
            .map(|offer| offer.offered.clone().map(text::owned))
            .collect();
        let replica = text::text(self.replica());
        self.timed("reporting the upstream tools withheld", async {
            let mut client = self.client().await?;
            let transaction = client
                .transaction()
                .await
                .map_err(Error::db("reporting the upstream tools withheld"))?;
            transaction
                .execute(
                    "DELETE FROM upstream_offers WHERE replica = $1",
                    &[&replica],
                )
                .await
                .map_err(Error::db("reporting the upstream tools withheld"))?;
            transaction
                .execute(
                    "INSERT INTO upstream_offers
                        (replica, upstream, tool, upstream_tool, definition, annotations, withheld,
                         offered)
                     SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[],
                                              $6::text[], $7::text[], $8::text[])
                     ON CONFLICT (replica, tool) DO NOTHING",
                    &[
                        &replica,
                        &upstreams,
                        &tools,
                        &upstream_tools,
                        &definitions,
                        &annotations,
                        &withheld,
                        &offered,
                    ],
                )
                .await
                .map_err(Error::db("reporting the upstream tools withheld"))?;
            transaction
                .commit()
                .await
                .map_err(Error::db("reporting the upstream tools withheld"))
        })
        .await
    }

    /// Keeps this replica's report alive: an offer not reported nor refreshed within
    /// [`UPSTREAM_OFFER_TTL`] is taken for a dead replica's. Call it when nothing changed
    /// since the last report, well within the TTL.
    pub async fn refresh_upstream_offers(&self) -> Result<(), Error> {
        let replica = text::text(self.replica());
        self.timed("refreshing the upstream tools withheld", async {
            let client = self.client().await?;
            client
                .execute(
                    "UPDATE upstream_offers SET seen_at = now() WHERE replica = $1",
                    &[&replica],
                )
                .await
                .map_err(Error::db("refreshing the upstream tools withheld"))?;
            Ok(())
        })
        .await
    }

    /// What the live replicas withhold now, of `upstream` (or of every upstream), by
    /// upstream, tool and replica: what `registry-admin upstream list` shows. Offers older
    /// than [`UPSTREAM_OFFER_TTL`] (a dead replica's) are left out.
    pub async fn upstream_offers(
        &self,
        upstream: Option<&str>,
    ) -> Result<Vec<UpstreamOffer>, Error> {
        let upstream = upstream.map(text::text);
        self.timed("reading the upstream tools withheld", async {
            let client = self.client().await?;
            let rows = client
                .query(
                    &format!(
                        "{OFFER_COLUMNS} WHERE ($1::text IS NULL OR upstream = $1)
                           AND seen_at >= now() - make_interval(secs => $2)
                         ORDER BY upstream, tool, replica LIMIT {MAX_UPSTREAM_OFFERS}"
                    ),
                    &[&upstream, &ttl_secs()],
                )
                .await
                .map_err(Error::db("reading the upstream tools withheld"))?;
            Ok(rows.iter().map(offer_of).collect())
        })
        .await
    }

    /// Accepts exactly the definition an operator reviewed: the offer of `upstream`'s tool
    /// `tool` (the registry's name, `notes_echo`; or, when `None`, the one tool whose offer
    /// has that digest) whose definition digest is `definition`, and whose annotations digest
    /// is `annotations` when given. Only live replicas' offers count (reported within
    /// [`UPSTREAM_OFFER_TTL`]). Records one acceptance, with `origin`, and returns it.
    ///
    /// Refused, recording nothing ([`Error::NotAccepted`]), when no live replica offers that
    /// digest (the offer changed since it was reviewed: a stale digest), when the digest
    /// names several tools and no `tool` was given, or when it is offered with several
    /// annotations and none was given. Accepting is the admin role's: a replica's role is
    /// refused by PostgreSQL ([`Error::PermissionDenied`]).
    ///
    /// ```no_run
    /// # async fn accept(plane: registry_postgres::ControlPlane) -> Result<(), registry_postgres::Error> {
    /// let accepted = plane
    ///     .accept_upstream("notes", Some("notes_echo"), "sha256:5e1f…", None, "registry-admin (alice)")
    ///     .await?;
    /// println!("recorded acceptance #{}", accepted.seq);
    /// # Ok(()) }
    /// ```
    pub async fn accept_upstream(
        &self,
        upstream: &str,
        tool: Option<&str>,
        definition: &str,
        annotations: Option<&str>,
        origin: &str,
    ) -> Result<UpstreamAcceptance, Error> {
        let (upstream, tool, definition, annotations, origin) = (
            text::text(upstream),
            tool.map(text::text),
            text::text(definition),
            annotations.map(text::text),
            text::text(origin),
        );
        self.timed("recording an upstream acceptance", async {
            let mut client = self.client().await?;
            let transaction = client
                .transaction()
                .await
                .map_err(Error::db("recording an upstream acceptance"))?;
            let rows = transaction
                .query(
                    "SELECT DISTINCT tool, upstream_tool, definition, annotations
                       FROM upstream_offers
                      WHERE upstream = $1 AND ($2::text IS NULL OR tool = $2)
                        AND seen_at >= now() - make_interval(secs => $3)
                      ORDER BY tool, definition, annotations
                      LIMIT 1000",
                    &[&upstream, &tool, &ttl_secs()],
                )
                .await
                .map_err(Error::db("reading the upstream tools offered"))?;
            let offered: Vec<(String, String, String, String)> = rows
                .iter()
                .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3)))
                .collect();
            let matching: Vec<&(String, String, String, String)> = offered
                .iter()
                .filter(|(_, _, digest, notes)| {
                    *digest == *definition
                        && annotations.as_deref().is_none_or(|wanted| wanted == notes)
                })
                .collect();
            let what = match &tool {
                Some(tool) => format!("tool {tool:?} of upstream {upstream:?}"),
                None => format!("upstream {upstream:?}"),
            };
            let chosen = match matching.as_slice() {
                [] => {
                    let now: Vec<String> = offered
                        .iter()
                        .map(|(tool, _, digest, notes)| {
                            format!("{tool} {digest} (annotations {notes})")
                        })
                        .collect();
                    return Err(Error::NotAccepted(format!(
                        "no live replica offers {what} with definition {definition:?}{}; \
                         offered now: {}. The offer changed since it was reviewed, or the \
                         replica that offered it is gone: review it again with \
                         `registry-admin upstream list`",
                        annotations
                            .as_deref()
                            .map(|a| format!(" and annotations {a:?}"))
                            .unwrap_or_default(),
                        if now.is_empty() {
                            "nothing".to_owned()
                        } else {
                            now.join(", ")
                        }
                    )));
                }
                [one] => *one,
                [first, rest @ ..] => {
                    if rest.iter().any(|other| other.0 != first.0) {
                        return Err(Error::NotAccepted(format!(
                            "the definition {definition:?} is offered for several tools of \
                             {what}; name the one with --tool"
                        )));
                    }
                    return Err(Error::NotAccepted(format!(
                        "the definition {definition:?} of {what} is offered with several \
                         annotations; name the ones reviewed with --annotations"
                    )));
                }
            };
            let (tool, upstream_tool, definition, notes) = chosen;
            let row = transaction
                .query_one(
                    &format!(
                        "INSERT INTO upstream_acceptances
                            (upstream, tool, upstream_tool, definition, annotations, origin)
                         VALUES ($1, $2, $3, $4, $5, $6)
                         RETURNING {ACCEPTANCE_COLUMNS}"
                    ),
                    &[&upstream, tool, upstream_tool, definition, notes, &origin],
                )
                .await
                .map_err(Error::db("recording an upstream acceptance"))?;
            transaction
                .commit()
                .await
                .map_err(Error::db("recording an upstream acceptance"))?;
            Ok(acceptance_of(&row))
        })
        .await
    }

    /// The acceptances after sequence number `after`, oldest first, at most `limit`: what a
    /// replica applies.
    pub async fn upstream_acceptances(
        &self,
        after: i64,
        limit: i64,
    ) -> Result<Vec<UpstreamAcceptance>, Error> {
        self.timed("reading upstream acceptances", async {
            let client = self.client().await?;
            let rows = client
                .query(
                    &format!(
                        "SELECT {ACCEPTANCE_COLUMNS} FROM upstream_acceptances
                          WHERE seq > $1 ORDER BY seq LIMIT $2"
                    ),
                    &[&after, &limit],
                )
                .await
                .map_err(Error::db("reading upstream acceptances"))?;
            Ok(rows.iter().map(acceptance_of).collect())
        })
        .await
    }
}

/// [`UPSTREAM_OFFER_TTL`] in seconds, as `make_interval` takes them.
fn ttl_secs() -> f64 {
    UPSTREAM_OFFER_TTL.as_secs_f64()
}
