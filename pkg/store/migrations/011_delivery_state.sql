-- chatd schema, version 11: how far each user's sessions acked each chat,
-- for offline notifications (docs/integrations.md, "Offline
-- notifications"). Written only when notifications are on, coalesced per
-- (user, chat) by every node; the notifier reads it beside read_state to
-- tell who got a message live. No foreign key: a row of a chat deleted
-- since is only never read again, while a key would fail a whole batch.

create table delivery_state (
    user_id  text   not null,
    chat_id  text   not null,
    upto_seq bigint not null,
    primary key (user_id, chat_id)
) with (fillfactor = 50); -- room on each page, so the frequent updates stay HOT

---- create above / drop below ----

drop table delivery_state;
