-- chatd schema, version 1. Applied by tern at Store open, inside one transaction.

-- A chat and its per-chat message counter. last_seq is the seq of the newest
-- accepted message; CommitBatch raises it under this row's lock, which is what
-- makes seq gapless and in commit order (invariant 5).
create table chats (
    id         text        primary key,
    kind       text        not null check (kind in ('group', 'direct')),
    title      text        not null default '',
    created_at timestamptz not null default now(),
    last_seq   bigint      not null default 0,
    -- history retention for this chat; null means the server default.
    retention  interval    null
);

create table members (
    chat_id   text        not null references chats (id) on delete cascade,
    user_id   text        not null,
    joined_at timestamptz not null default now(),
    primary key (chat_id, user_id)
);
-- "my chats" lookups.
create index members_user_id_idx on members (user_id);

-- Every accepted message. id is global and only used to join the outbox;
-- order inside a chat is seq, identity is msg_id (a ULID).
create table history (
    id         bigserial   primary key,
    msg_id     text        not null,
    chat_id    text        not null references chats (id) on delete cascade,
    seq        bigint      not null,
    sender     text        not null,
    device     text        not null,
    cid        text        not null,
    body       text        not null,
    created_at timestamptz not null,
    constraint history_msg_id_key unique (msg_id),
    -- paging a chat by seq walks this index.
    constraint history_chat_seq_key unique (chat_id, seq),
    -- idempotency: one message per (sender, client correlation id).
    constraint history_sender_cid_key unique (sender, cid)
);
-- retention deletes by age; history is append-mostly, so a BRIN index costs
-- next to nothing on the accept path and still lets pruning skip young pages.
create index history_created_at_brin on history using brin (created_at);

-- Accepted messages not yet relayed to the delivery stream. The recipients
-- are frozen at acceptance. The relay deletes rows once relayed, so the table
-- stays near empty. A history retention delete must never be blocked by a
-- stale outbox row, hence the cascade.
create table outbox (
    id         bigserial   primary key,
    history_id bigint      not null references history (id) on delete cascade,
    recipients text[]      not null,
    created_at timestamptz not null default now()
);
-- the cascade above looks outbox rows up by history id.
create index outbox_history_id_idx on outbox (history_id);

create table read_state (
    user_id     text        not null,
    chat_id     text        not null references chats (id) on delete cascade,
    upto_seq    bigint      not null,
    upto_msg_id text        not null,
    updated_at  timestamptz not null default now(),
    primary key (user_id, chat_id)
);

---- create above / drop below ----

drop table read_state;
drop table outbox;
drop table history;
drop table members;
drop table chats;
