-- Placeholder for migration 2, which another branch of issue 8 owns. tern
-- numbers migrations 1..n without gaps, so 003 cannot be tested without a 2.
-- When merging: keep the other branch's 002_*.sql and delete this file.
select 1;
