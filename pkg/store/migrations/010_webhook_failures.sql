-- chatd schema, version 10: webhook events set aside after their delivery
-- attempts (docs/integrations.md, "Dead letters"). The endpoint's consumer
-- acks an event once it is here, so a dead endpoint holds the delivery
-- stream only for as long as its attempts last. body is the signed payload
-- as sent (text, not jsonb: a replay must send the same bytes).

create table webhook_failures (
    id          bigint generated always as identity primary key,
    endpoint    text        not null,
    url         text        not null,
    webhook_id  text        not null,
    chat_id     text        not null,
    seq         bigint      not null,
    message_id  text        not null,
    kind        text        not null,
    body        text        not null,
    attempts    integer     not null,
    last_error  text        not null,
    failed_at   timestamptz not null default now()
);

---- create above / drop below ----

drop table webhook_failures;
