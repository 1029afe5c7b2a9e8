-- chatd schema, version 7: cheaper edits, deletes and reactions.
--
-- Each event rewrites its target message's row (current body, edited_at,
-- deleted, reactions). History pages were packed full, so every rewrite
-- put the new row version on another page and added an entry to each of
-- the table's indexes; a message with many reactions then had as many
-- entries per index, and every later lookup of it by msg_id walked them
-- all. Measured with chatload's mixed scenario (2,000 events/s), that
-- target lookup and update cost PostgreSQL more than all history inserts.
--
-- fillfactor 85 leaves room on each new page, so a rewrite of a recent
-- message (the ones that get reactions and edits) stays on its page as a
-- heap-only tuple: no index entries, and the page prunes its dead versions
-- itself. It applies to pages filled from now on.
alter table history set (fillfactor = 85);

-- Only edit events are looked up by target (a delete erases its message's
-- edits); reactions and deletes no longer pay for an index entry.
create index history_edit_target_idx on history (target) where kind = 'edit';
drop index history_target_idx;

---- create above / drop below ----

create index history_target_idx on history (target) where target is not null;
drop index history_edit_target_idx;
alter table history reset (fillfactor);
