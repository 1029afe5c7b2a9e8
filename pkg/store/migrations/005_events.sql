-- chatd schema, version 5: edits, deletes and reactions are events in the
-- chat's seq log (docs/protocol.md "Events (v2)").
--
-- An event is a history row like a message (its own seq, outbox row and
-- delivery). kind tells them apart; target is the msg_id an event refers to.
-- The target message's row also carries its current state (latest body,
-- edited_at, deleted, reactions), updated in the transaction that inserts the
-- event, so a reader of recent history sees the truth without replaying the
-- log.
--
-- meta is json, not jsonb: the contract returns it verbatim, number texts
-- included, and jsonb would rewrite 1e3 as 1000. reactions is jsonb
-- {"emoji": ["user", ...]} with each list sorted, null when there are none.
-- The reaction's add/remove flag is react_on ("on" is a reserved word).
alter table history
    add column kind      text        not null default 'message'
        check (kind in ('message', 'edit', 'delete', 'reaction')),
    add column target    text        null,
    add column meta      json        null,
    add column emoji     text        null,
    add column react_on  boolean     null,
    add column edited_at timestamptz null,
    add column deleted   boolean     not null default false,
    add column reactions jsonb       null;

-- a delete erases the bodies of its message's edit events, found by target.
create index history_target_idx on history (target) where target is not null;

-- GET /api/chats counts unread messages of kind 'message' not deleted; the
-- (chat_id, seq) key carries both (as 004 added sender) so the count stays an
-- index-only scan.
create unique index history_chat_seq_unread_key on history (chat_id, seq) include (sender, kind, deleted);
alter table history
    drop constraint history_chat_seq_key,
    add constraint history_chat_seq_key unique using index history_chat_seq_unread_key;

---- create above / drop below ----

create unique index history_chat_seq_sender_key on history (chat_id, seq) include (sender);
alter table history
    drop constraint history_chat_seq_key,
    add constraint history_chat_seq_key unique using index history_chat_seq_sender_key;
drop index history_target_idx;
alter table history
    drop column kind, drop column target, drop column meta, drop column emoji,
    drop column react_on, drop column edited_at, drop column deleted, drop column reactions;
