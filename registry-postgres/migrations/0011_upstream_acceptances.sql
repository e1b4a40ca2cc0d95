-- Version 11: what the replicas' federated upstream MCP servers offer, and what operators
-- accept of it.
--
-- A replica that federates upstreams (registry-mcp's `Federation`) records the upstream
-- tools it withholds for a change or as new, with the digests of what each upstream offers
-- it (`upstream_offers`, replaced whole by each report). `registry-admin upstream accept NAME
-- [--tool T]` records one acceptance per distinct offer (`upstream_acceptances`): bound to
-- the digests shown, so that a definition changed again after the operator looked is not
-- accepted. Every replica with that upstream applies each acceptance to the tool whose
-- offer has exactly those digests: pinned, and served without a restart.
CREATE TABLE upstream_offers (
    replica       text        NOT NULL,
    upstream      text        NOT NULL,
    tool          text        NOT NULL,
    upstream_tool text        NOT NULL,
    definition    text        NOT NULL,
    annotations   text        NOT NULL,
    withheld      text        NOT NULL,
    seen_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (replica, tool)
);
CREATE INDEX upstream_offers_upstream ON upstream_offers (upstream);

CREATE TABLE upstream_acceptances (
    seq           bigserial   PRIMARY KEY,
    at            timestamptz NOT NULL DEFAULT now(),
    upstream      text        NOT NULL,
    tool          text        NOT NULL,
    upstream_tool text        NOT NULL,
    definition    text        NOT NULL,
    annotations   text        NOT NULL,
    origin        text        NOT NULL
);
