-- Writes one node's presence in a session and reads everyone else's.
-- Guarantees: an entry counts only until its expiry (Redis's clock), so a node that dies stops
-- being counted once its last entry expires; expired entries are removed as they are met. A
-- change of this node's entry is announced on the session's channel (sequence number 0: it is
-- information, not state).
-- The requests whose agent waits on this node (an asking socket, a long-poll) are kept apart,
-- in the session's held hash (an older node, reading only the presence hash, never meets
-- them): every node judges from them whether a request's agent is still somewhere.
-- KEYS: 1 the session's presence hash, 2 its held hash. ARGV: 1 node id, 2 tabs here, 3 agent
--       here (0 or 1), 4 how long the entry lives in ms, 5 channel, 6 publish command, 7 the
--       ids of the requests held here, space-separated ('' for none; ids hold no space).
-- Returns: the other nodes' tabs, whether an agent waits on any of them (0 or 1), then the
-- ids of the requests they hold.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expiry = string.format('%.0f', now + tonumber(ARGV[4]))
local before = redis.call('HGET', KEYS[1], ARGV[1])
local mine = ARGV[2] .. ' ' .. ARGV[3]
if ARGV[2] == '0' and ARGV[3] == '0' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], mine .. ' ' .. expiry)
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]) * 2)
end
local changed = true
if before then
  changed = string.sub(before, 1, #mine + 1) ~= mine .. ' '
elseif ARGV[2] == '0' and ARGV[3] == '0' then
  changed = false
end
local held_before = redis.call('HGET', KEYS[2], ARGV[1])
local held_before_ids = held_before and string.match(held_before, '^%d+ (.*)$') or ''
if ARGV[7] == '' then
  redis.call('HDEL', KEYS[2], ARGV[1])
else
  redis.call('HSET', KEYS[2], ARGV[1], expiry .. ' ' .. ARGV[7])
  redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[4]) * 2)
end
if held_before_ids ~= ARGV[7] then
  changed = true
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
local out = {tabs, online}
local held = redis.call('HGETALL', KEYS[2])
for i = 1, #held, 2 do
  local node, value = held[i], held[i + 1]
  if node ~= ARGV[1] then
    local expires, ids = string.match(value, '^(%d+) (.*)$')
    if not expires or tonumber(expires) < now then
      redis.call('HDEL', KEYS[2], node)
    else
      for id in string.gmatch(ids, '%S+') do
        table.insert(out, id)
      end
    end
  end
end
return out
