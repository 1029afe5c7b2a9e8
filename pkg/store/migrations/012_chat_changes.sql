-- chatd schema, version 12: the changes of chats that are not events of
-- their seq log (members, read positions), for the webhooks that take them
-- (docs/integrations.md, "Member changes and read receipts"). A row is
-- written in the same transaction as its change, only while an endpoint
-- takes its kind, and deleted once it is in the changes stream. id orders
-- them: a chat's member changes hold the chat row's lock, and a member's
-- reads its read_state row's, so within each the ids follow commit order.

create table chat_changes (
    id       bigint generated always as identity primary key,
    kind     text        not null check (kind in ('member', 'read')),
    chat_id  text        not null,
    change   text        not null default '',
    users    text[]      not null,
    by_user  text        not null default '',
    seq      bigint      not null default 0,
    upto     text        not null default '',
    at       timestamptz not null default now()
);

---- create above / drop below ----

drop table chat_changes;
