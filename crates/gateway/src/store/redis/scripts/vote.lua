-- Keeps a person's vote on a request that needs several people: a compare-and-set of the
-- request's `votes` field, so that votes cast on several nodes at once are each counted once.
-- Guarantees: the votes are replaced only if they are still those the node counted on (else
-- `stale`, with the votes as they are, for the node to count again); a request that has ended
-- takes no vote (`lost`, with its ending); the vote kept is sealed onto the session's audit
-- trail and told to every node. A vote at or after the deadline (Redis's clock) is refused
-- (`late`): the timeout, or the default, ends the request.
-- KEYS: 1 the request's hash, 2 the session's sequence, 3 the session's trail, 4 its head.
-- ARGV: 1 id, 2 the votes counted on (JSON, '' for none), 3 every vote with this one (JSON),
--       4 the voter, 5 the vote's entry tail, 6 its digest, 7 the trail's retention in ms,
--       8 the seal (chain.lua), 9 channel, 10 publish command.
local f = redis.call('HMGET', KEYS[1], 'state', 'votes', 'resolution', 'resolved', 'deadline')
if not f[1] then
  return {'unknown'}
end
if f[1] == 'resolved' then
  return {'lost', f[3] or '', f[4] or ''}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = tonumber(f[5])
if deadline and now >= deadline then
  return {'late'}
end
if (f[2] or '') ~= ARGV[2] then
  return {'stale', f[2] or ''}
end
local at = string.format('%.0f', now)
audit_append(KEYS[3], KEYS[4], ARGV[5], ARGV[6], at, ARGV[7], ARGV[8])
redis.call('HSET', KEYS[1], 'votes', ARGV[3])
local seq = redis.call('INCR', KEYS[2])
redis.call(ARGV[10], ARGV[9], seq .. audit_noted .. '\nvoted\n' .. ARGV[1] .. '\n' .. ARGV[4] .. '\n' .. ARGV[3])
return {'kept', at}
