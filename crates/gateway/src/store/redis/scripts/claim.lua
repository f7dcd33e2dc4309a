-- Claims due entries of the deadline index for one sweeper (the visibility-timeout pattern).
-- Guarantees: an entry due by Redis's clock is handed to one sweeper at a time; its score moves
-- to the end of the lease, so if that sweeper dies the entry is due again then.
-- KEYS: 1 the index. ARGV: 1 lease in ms, 2 how many at most.
-- Returns: now, the lease's end, then the claimed members.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = string.format('%.0f', now + tonumber(ARGV[1]))
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
local out = {string.format('%.0f', now), lease}
for _, member in ipairs(due) do
  redis.call('ZADD', KEYS[1], lease, member)
  table.insert(out, member)
end
return out
