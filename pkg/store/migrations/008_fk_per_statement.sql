-- chatd schema, version 8: the two foreign keys on the accept path are
-- checked once per statement instead of once per row.
--
-- A foreign key checks every inserted row on its own: a lookup of the
-- referenced row that also locks it (FOR KEY SHARE, which writes WAL). On
-- the accept path that is every history row (its chat) and every outbox row
-- (its history row): without the two, PostgreSQL spent 13-20% less CPU per
-- message, and these checks keep about two thirds of that (BENCHMARKS.md,
-- "Issue 12, seventh pass"). The same rules are kept as
-- triggers that run once per statement over the rows it changed, and fail
-- with the same error (foreign_key_violation, SQLSTATE 23503):
--
--   * an outbox row's history row exists (invariant 1);
--   * a history row that has an outbox row is not deleted (migration 002:
--     retention must not delete what was never relayed), nor its id changed;
--   * a history row's chat exists;
--   * deleting a chat deletes its history (the old ON DELETE CASCADE), which
--     the rule above refuses while one of its messages is unrelayed.
--
-- The foreign keys' row locks guarded a referenced row against a concurrent
-- delete; chatd's writes do not need that: a history row and its outbox row
-- are inserted in one transaction, so no one sees the history row before its
-- outbox row, and the accepting transaction holds its chats' rows FOR NO KEY
-- UPDATE, which a delete of the chat waits for. The checks' own reads see
-- every committed row in chatd's READ COMMITTED transactions, where each
-- statement of a trigger function takes a new snapshot; an operator who
-- deletes history by hand should do so in READ COMMITTED too.

alter table outbox drop constraint outbox_history_id_fkey;
alter table history drop constraint history_chat_id_fkey;

-- Inserts and deletes are checked per statement, over its transition
-- table. Updates of the key columns are checked per row: chatd never
-- updates them, so these triggers never fire on its writes (an UPDATE OF
-- trigger is not even considered when its columns are not assigned).

create or replace function chatd_outbox_history_exists() returns trigger
language plpgsql as $$
begin
    -- A scalar subquery, not "not exists": an index probe per row whatever
    -- the planner guesses of the transition table (see probeNote in
    -- commit.go); an anti-join may scan all of history.
    if exists (select 1 from changed n
            where (select h.id from history h where h.id = n.history_id) is null) then
        raise foreign_key_violation using
            message = 'outbox row without its history row (invariant 1)',
            constraint = 'outbox_history_id_fkey';
    end if;
    return null;
end $$;

create trigger outbox_history_exists after insert on outbox
    referencing new table as changed
    for each statement execute function chatd_outbox_history_exists();

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

create trigger history_keeps_unrelayed after delete on history
    referencing old table as gone
    for each statement execute function chatd_history_keeps_unrelayed();

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

create trigger history_chat_exists after insert on history
    referencing new table as changed
    for each statement execute function chatd_history_chat_exists();

create or replace function chatd_chat_history_cascade() returns trigger
language plpgsql as $$
begin
    delete from history h using gone g where h.chat_id = g.id;
    return null;
end $$;

create trigger chat_history_cascade after delete on chats
    referencing old table as gone
    for each statement execute function chatd_chat_history_cascade();

-- Updates of key columns, row by row, with the rules above.
create or replace function chatd_outbox_key_update() returns trigger
language plpgsql as $$
begin
    if not exists (select 1 from history h where h.id = new.history_id) then
        raise foreign_key_violation using
            message = 'outbox row without its history row (invariant 1)',
            constraint = 'outbox_history_id_fkey';
    end if;
    return null;
end $$;

create or replace function chatd_history_key_update() returns trigger
language plpgsql as $$
begin
    if old.id is distinct from new.id and exists (
            select 1 from outbox o where o.history_id = old.id) then
        raise foreign_key_violation using
            message = 'history row still has an outbox row: it was never relayed (migration 002)',
            constraint = 'outbox_history_id_fkey';
    end if;
    if not exists (select 1 from chats c where c.id = new.chat_id) then
        raise foreign_key_violation using
            message = 'history row of a chat that does not exist',
            constraint = 'history_chat_id_fkey';
    end if;
    return null;
end $$;

create or replace function chatd_chat_key_update() returns trigger
language plpgsql as $$
begin
    if exists (select 1 from history h where h.chat_id = old.id) then
        raise foreign_key_violation using
            message = 'chat still has history rows',
            constraint = 'history_chat_id_fkey';
    end if;
    return null;
end $$;

create trigger outbox_key_update after update of history_id on outbox
    for each row when (old.history_id is distinct from new.history_id)
    execute function chatd_outbox_key_update();
create trigger history_key_update after update of id, chat_id on history
    for each row when (old.id is distinct from new.id or old.chat_id is distinct from new.chat_id)
    execute function chatd_history_key_update();
create trigger chat_key_update after update of id on chats
    for each row when (old.id is distinct from new.id)
    execute function chatd_chat_key_update();

---- create above / drop below ----

drop trigger chat_key_update on chats;
drop function chatd_chat_key_update();
drop trigger history_key_update on history;
drop function chatd_history_key_update();
drop trigger outbox_key_update on outbox;
drop function chatd_outbox_key_update();
drop trigger chat_history_cascade on chats;
drop function chatd_chat_history_cascade();
drop trigger history_chat_exists on history;
drop function chatd_history_chat_exists();
drop trigger history_keeps_unrelayed on history;
drop function chatd_history_keeps_unrelayed();
drop trigger outbox_history_exists on outbox;
drop function chatd_outbox_history_exists();
alter table history add constraint history_chat_id_fkey
    foreign key (chat_id) references chats (id) on delete cascade;
alter table outbox add constraint outbox_history_id_fkey
    foreign key (history_id) references history (id) on delete restrict;
