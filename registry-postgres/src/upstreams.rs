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
        }
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

const OFFER_COLUMNS: &str = "SELECT replica, upstream, tool, upstream_tool, definition, annotations, withheld FROM upstream_offers";

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
                        (replica, upstream, tool, upstream_tool, definition, annotations, withheld)
                     SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[],
                                              $6::text[], $7::text[])
                     ON CONFLICT (replica, tool) DO NOTHING",
                    &[
                        &replica,
                        &upstreams,
                        &tools,
                        &upstream_tools,
                        &definitions,
                        &annotations,
                        &withheld,
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

    /// What the replicas withhold now, of `upstream` (or of every upstream), by upstream,
    /// tool and replica: what `registry-admin upstream list` shows.
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
                        "{OFFER_COLUMNS} WHERE $1::text IS NULL OR upstream = $1
                         ORDER BY upstream, tool, replica LIMIT {MAX_UPSTREAM_OFFERS}"
                    ),
                    &[&upstream],
                )
                .await
                .map_err(Error::db("reading the upstream tools withheld"))?;
            Ok(rows.iter().map(offer_of).collect())
        })
        .await
    }

    /// Accepts what the replicas offer now of `upstream`'s tools (or of its tool `tool`,
    /// given by the registry's name or the upstream's): one acceptance per distinct
    /// (tool, definition, annotations), recorded with `origin`, in one statement. Returns
    /// them; none when no replica withholds such a tool.
    pub async fn accept_upstream(
        &self,
        upstream: &str,
        tool: Option<&str>,
        origin: &str,
    ) -> Result<Vec<UpstreamAcceptance>, Error> {
        let (upstream, tool, origin) = (
            text::text(upstream),
            tool.map(text::text),
            text::text(origin),
        );
        self.timed("recording an upstream acceptance", async {
            let client = self.client().await?;
            let rows = client
                .query(
                    &format!(
                        "INSERT INTO upstream_acceptances
                            (upstream, tool, upstream_tool, definition, annotations, origin)
                         SELECT DISTINCT upstream, tool, upstream_tool, definition, annotations, $3
                           FROM upstream_offers
                          WHERE upstream = $1
                            AND ($2::text IS NULL OR tool = $2 OR upstream_tool = $2)
                         ORDER BY tool, definition, annotations
                         RETURNING {ACCEPTANCE_COLUMNS}"
                    ),
                    &[&upstream, &tool, &origin],
                )
                .await
                .map_err(Error::db("recording an upstream acceptance"))?;
            Ok(rows.iter().map(acceptance_of).collect())
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
