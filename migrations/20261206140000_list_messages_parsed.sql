-- A message is read at the door once (`Message::read`: headers, MIME,
-- trailers) and that reading is stored beside the raw bytes, tagged with
-- the edition of the reader that made it. Assembling a thread, starting
-- its series and answering it read the stored form; the raw bytes stay as
-- the message came, so a later reader edition can read a message again.
-- Rows from before this migration have no stored form (edition 0) and are
-- read once more, the first time their thread is.
ALTER TABLE list_messages
    ADD COLUMN parsed jsonb,
    ADD COLUMN read_edition smallint NOT NULL DEFAULT 0;
