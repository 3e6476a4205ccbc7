-- What patchperf tells people: one row per (what is reported, channel,
-- recipient), so queueing the same report twice sends it once. A sender
-- takes due rows with FOR UPDATE SKIP LOCKED (several servers share the
-- work), sends, and marks the row sent in the same transaction.
CREATE TABLE outbox (
    id              bigserial PRIMARY KEY,
    -- What is reported: `change:<comparison id>`.
    key             text NOT NULL,
    channel         text NOT NULL CHECK (channel IN ('mail', 'webhook')),
    -- A mail address or a webhook URL.
    recipient       text NOT NULL,
    subject         text NOT NULL,
    -- The mail's text, or the webhook's JSON.
    body            text NOT NULL,
    -- A mail's To and Cc headers (every recipient gets the same mail).
    mail_to         text,
    mail_cc         text,
    state           text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'sent', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    last_error      text,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz,
    UNIQUE (key, channel, recipient)
);

CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE state = 'queued';
