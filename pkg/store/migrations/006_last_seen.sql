-- chatd schema, version 6: when each user was last seen online.
--
-- Presence itself lives in a JetStream KV bucket (entries expire with the
-- node that wrote them); a user's last_seen is the one part of it worth
-- keeping, so that a node started after the user left, or a restarted
-- cluster, still answers it. Written on every offline transition (each node
-- that sees one writes it; the upsert keeps the latest), read by
-- GET /api/presence for users the node has not seen go offline itself.
create table last_seen (
    user_id text        primary key,
    seen_at timestamptz not null
);

---- create above / drop below ----

drop table last_seen;
