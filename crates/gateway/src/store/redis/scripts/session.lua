-- Reads one session whole: its sequence number, who follows it, and every request, oldest
-- first, in one atomic step, so the snapshot matches the sequence number exactly; and its
-- audit trail's head, for the node to propose the next entry's hash (chain.lua).
-- KEYS: 1 the session's ids, 2 the session's sequence, 3 its followers, 4 its trail's head.
-- ARGV: 1 the prefix of its request keys.
-- Returns: seq, the trail's head ('' for none), how many followers, each follower, then for
-- each request: id, asked, deadline, state, resolution, resolved, body, follows, votes.
local out = {redis.call('GET', KEYS[2]) or '0', redis.call('GET', KEYS[4]) or ''}
local followers = redis.call('SMEMBERS', KEYS[3])
table.insert(out, tostring(#followers))
for _, user in ipairs(followers) do
  table.insert(out, user)
end
local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
for _, id in ipairs(ids) do
  local f = redis.call('HMGET', ARGV[1] .. id, 'asked', 'deadline', 'state', 'resolution', 'resolved', 'body', 'follows', 'votes')
  if f[3] then
    table.insert(out, id)
    for i = 1, 8 do
      table.insert(out, f[i] or '')
    end
  end
end
return out
