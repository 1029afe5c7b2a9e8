-- chatd schema, version 4: count unread messages from the index alone.
--
-- GET /api/chats counts, for each of the caller's chats, the messages from
-- others after the caller's read position: history rows with chat_id = C,
-- seq > read_seq and sender <> U. The (chat_id, seq) key already finds that
-- range; carrying sender in the same index lets the count be an index-only
-- scan, instead of a visit to the heap for every unread message (scattered
-- across the table, since chats interleave). Widening the existing key rather
-- than adding a second index keeps the accept path at one index insert for it.
--
-- The new index is built first (that blocks writes to history, not reads,
-- for the length of the build), then takes over the constraint and its name.
create unique index history_chat_seq_sender_key on history (chat_id, seq) include (sender);
alter table history
    drop constraint history_chat_seq_key,
    add constraint history_chat_seq_key unique using index history_chat_seq_sender_key;

---- create above / drop below ----

create unique index history_chat_seq_plain_key on history (chat_id, seq);
alter table history
    drop constraint history_chat_seq_key,
    add constraint history_chat_seq_key unique using index history_chat_seq_plain_key;
