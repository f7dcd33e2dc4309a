-- Ends a sweeper's claim on an index entry: sets its next score, or removes it.
-- Guarantees: only while the entry still holds the claim's score; one brought forward since
-- (the id asked anew, with an earlier deadline) is left as it is.
-- KEYS: 1 the index. ARGV: 1 member, 2 the claim's score, 3 the next score, or '' to remove.
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then
  return 0
end
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
end
return 1
