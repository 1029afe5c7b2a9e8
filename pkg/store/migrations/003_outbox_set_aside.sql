-- Outbox rows the relay could never publish (a deterministic publish error,
-- e.g. an envelope over NATS's max payload), moved out of the outbox so one
-- row cannot stop the relay for every chat. Kept for the operator: the
-- message itself is safe in history, and its recipients recover it from
-- there (G3). id is the row's outbox id. The cascade keeps history
-- retention unblocked, as for the outbox.
create table outbox_set_aside (
    id           bigint      primary key,
    history_id   bigint      not null references history (id) on delete cascade,
    recipients   text[]      not null,
    created_at   timestamptz not null,
    set_aside_at timestamptz not null default now(),
    reason       text        not null
);
create index outbox_set_aside_history_id_idx on outbox_set_aside (history_id);

---- create above / drop below ----

drop table outbox_set_aside;
