-- Recall reads, for each of about a hundred index hits, ten columns of its memory row
-- (store.RecallRows) by id. The row is about 2 KB, most of it the embedding blob recall never
-- reads, so each hit cost a page read of its own at random: about a third of a recall's CPU.
-- This index holds those columns, ordered by id: the read finds everything in it, a few
-- hundred bytes a memory, without touching the table.
CREATE INDEX IF NOT EXISTS memories_recall ON memories (id, account_id, user_id, valid_to_us, superseded_by, duplicate_of,
  scope, category, abstract, text, sources, event_us, created_us);
