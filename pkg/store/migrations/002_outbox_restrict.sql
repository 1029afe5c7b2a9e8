-- chatd schema, version 2: retention must not delete what was never relayed.
--
-- Version 1 let a history delete cascade to its outbox row so that retention
-- was "never blocked by the outbox". That lost messages: with a chat retention
-- shorter than a NATS outage, pruning deleted accepted messages together with
-- their unrelayed outbox rows, and no recipient ever got them (issue 8, item 10).
-- Now the database refuses such a delete; PruneHistory skips those rows and
-- takes them once the relay has deleted their outbox rows.
alter table outbox
    drop constraint outbox_history_id_fkey,
    add constraint outbox_history_id_fkey
        foreign key (history_id) references history (id) on delete restrict;

---- create above / drop below ----

alter table outbox
    drop constraint outbox_history_id_fkey,
    add constraint outbox_history_id_fkey
        foreign key (history_id) references history (id) on delete cascade;
