-- GET /v1/memories and `membus export` page through a user's memories by (created_us, id),
-- newest first, with a keyset condition: this index serves it without sorting or skipping rows
-- (created_us alone cannot, it is not unique; updated_us moves when a memory gains a source).
CREATE INDEX IF NOT EXISTS memories_page ON memories (account_id, user_id, created_us, id);
