-- Writes one node's presence in a session and reads everyone else's.
-- Guarantees: an entry counts only until its expiry (Redis's clock), so a node that dies stops
-- being counted once its last entry expires; expired entries are removed as they are met. A
-- change of this node's entry is announced on the session's channel (sequence number 0: it is
-- information, not state).
-- KEYS: 1 the session's presence hash. ARGV: 1 node id, 2 tabs here, 3 agent here (0 or 1),
--       4 how long the entry lives in ms, 5 channel, 6 publish command.
-- Returns: the other nodes' tabs, and whether an agent waits on any of them (0 or 1).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local before = redis.call('HGET', KEYS[1], ARGV[1])
local mine = ARGV[2] .. ' ' .. ARGV[3]
if ARGV[2] == '0' and ARGV[3] == '0' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], mine .. ' ' .. string.format('%.0f', now + tonumber(ARGV[4])))
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]) * 2)
end
local changed = true
if before then
  changed = string.sub(before, 1, #mine + 1) ~= mine .. ' '
elseif ARGV[2] == '0' and ARGV[3] == '0' then
  changed = false
end
if changed then
  redis.call(ARGV[6], ARGV[5], '0\npresence\n')
end
local tabs, online = 0, 0
local entries = redis.call('HGETALL', KEYS[1])
for i = 1, #entries, 2 do
  local node, value = entries[i], entries[i + 1]
  if node ~= ARGV[1] then
    local count, agent, expires = string.match(value, '^(%d+) (%d) (%d+)$')
    if not expires or tonumber(expires) < now then
      redis.call('HDEL', KEYS[1], node)
    else
      tabs = tabs + tonumber(count)
      if agent == '1' then online = 1 end
    end
  end
end
return {tabs, online}
