-- chatd schema, version 9: one index less on the accept path, and the
-- chat check made once per chat instead of once per message.
--
-- outbox (history_id) was an index entry written for every accepted
-- message and deleted again a few milliseconds later, when the relay
-- deleted the row. Only the rare deletes of history read it (retention,
-- a chat's deletion): the outbox is near empty, so they now find the
-- unrelayed rows by one scan of the outbox per statement (a hash join)
-- instead. Measured with pgbench (an outbox insert and the relay's delete
-- of 55 rows, BENCHMARKS.md "Issue 12, thirteenth pass"): about 2-3 us of
-- PostgreSQL's CPU per row less.
--
-- history_chat_exists looked every inserted message's chat up; a batch
-- holds a few messages per chat, so it now looks up each distinct chat.

drop index outbox_history_id_idx;

create or replace function chatd_history_keeps_unrelayed() returns trigger
language plpgsql as $$
begin
    -- A join, not a probe per deleted row: without an index on
    -- outbox.history_id each probe would scan the outbox.
    if exists (select 1 from gone g join outbox o on o.history_id = g.id) then
        raise foreign_key_violation using
            message = 'history row still has an outbox row: it was never relayed (migration 002)',
            constraint = 'outbox_history_id_fkey';
    end if;
    return null;
end $$;

create or replace function chatd_history_chat_exists() returns trigger
language plpgsql as $$
begin
    -- A probe per distinct chat (see migration 008 on probes).
    if exists (select 1 from (select distinct chat_id from changed) n
            where (select c.id from chats c where c.id = n.chat_id) is null) then
        raise foreign_key_violation using
            message = 'history row of a chat that does not exist',
            constraint = 'history_chat_id_fkey';
    end if;
    return null;
end $$;

---- create above / drop below ----

create or replace function chatd_history_chat_exists() returns trigger
language plpgsql as $$
begin
    if exists (select 1 from changed n
            where (select c.id from chats c where c.id = n.chat_id) is null) then
        raise foreign_key_violation using
            message = 'history row of a chat that does not exist',
            constraint = 'history_chat_id_fkey';
    end if;
    return null;
end $$;

create or replace function chatd_history_keeps_unrelayed() returns trigger
language plpgsql as $$
begin
    if exists (select 1 from gone g
            where (select o.id from outbox o where o.history_id = g.id limit 1) is not null) then
        raise foreign_key_violation using
            message = 'history row still has an outbox row: it was never relayed (migration 002)',
            constraint = 'outbox_history_id_fkey';
    end if;
    return null;
end $$;

create index outbox_history_id_idx on outbox (history_id);
